// matmul's tensor-core class (see matmul.hpp): the kernel body of its points, written once in the
// DSL with the warp's mma step, and the pieces it shares with the exact class's body.
#pragma once

#include "ops/matmul.hpp"

namespace kiln::ops {

// Index of element (r, c) of a view whose batch starts at `base`.
inline Expr element_at(const Expr& base, const Expr& r, const Expr& c, const Expr& ld,
                       bool transposed) {
    return transposed ? base + c * ld + r : base + r * ld + c;
}

// Which tile of C a block computes: block x takes batch x / (mt*nt) and the tile at
// (x / nt % mt, x % nt) (matmul_grid()).
struct BlockIndex {
    Var batch, tile_m, tile_n;
};
BlockIndex block_index(KernelBuilder& k, const MatmulViews& p, const MatmulSchedule& s);

// kiln::Error unless a tensor-core point's tiles fit: warp tile wm x wn multiples of 16 x 8
// dividing the block tile, bk a multiple of 16 up to 64, at most 1024 threads.
void check_tensor_core_schedule(const MatmulSchedule& s);

// The body of a tensor-core point: f16/bf16 inputs, `store` as in matmul_body.
void tensor_core_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                      const MatmulSchedule& s, const MatmulStore& store);

}  // namespace kiln::ops
