// matmul's tensor-core class (see matmul.hpp): the kernel body of its points, written once in the
// DSL with the warp's mma step over any operands that read as matrices (matmul's views, conv1d's
// implicit GEMM), and the pieces it shares with the exact class's body.
#pragma once

#include <optional>

#include "ops/matmul/matmul.hpp"

namespace kiln::ops {

// Index of element (r, c) of a view whose batch starts at `base`.
inline Expr element_at(const Expr& base, const Expr& r, const Expr& c, const Expr& ld,
                       bool transposed) {
    return transposed ? base + c * ld + r : base + r * ld + c;
}

// Which tile of C (m x n a batch) a block computes: block x takes batch x / (mt*nt) and the tile
// at (x / nt % mt, x % nt) (matmul_grid()). Given `batches`, the batch is taken as at most
// batches - 1, which the grid makes it anyway: so bounded, the range analysis (ir/ranges.hpp)
// knows the index arithmetic built on it does not wrap, and a CPU's compiler sees C's rows as
// contiguous stores.
struct BlockIndex {
    Var batch, tile_m, tile_n;
};
BlockIndex block_index(KernelBuilder& k, const std::optional<Expr>& batches, const Expr& m,
                       const Expr& n, const MatmulSchedule& s,
                       const std::optional<Expr>& block = std::nullopt);

// kiln::Error unless a tensor-core point's tiles fit: warp tile wm x wn multiples of 16 x 8
// dividing the block tile, bk a multiple of 16 up to 64, at most 1024 threads.
void check_tensor_core_schedule(const MatmulSchedule& s);

// The body of a tensor-core point: f16/bf16 inputs, `store` as in matmul_body.
void tensor_core_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                      const MatmulSchedule& s, const MatmulStore& store);

// An operand of a tensor-core product, as a matrix per batch: element q (along k) of line `line`
// (a row of A, a column of B; in range, the body clamps it) is read(index(base, line, q)) with
// base = base_of(batch), computed once per block. Where `present` is given and false, the
// element is zero (index must still be in bounds).
struct TensorCoreOperand {
    ElementRead read;
    bool k_contiguous;  // elements q and q + 1 are adjacent in memory
    std::function<Expr(const Expr& batch)> base_of;
    std::function<Expr(const Expr& base, const Expr& line, const Expr& q)> index;
    std::function<Expr(const Expr& line, const Expr& q)> present = {};
    // Element q of lines l and l + 1 are adjacent in memory (a buffer's row-major B or
    // transposed A): with stages, such an operand is copied into k-major tiles.
    bool lines_contiguous = false;
};
// C[batch] = A[batch] · B[batch], m x n outputs a batch over k terms, each output a chain of mma
// steps over k in 16s from q = 0 (matmul's tensor-core class), `store` once per output in range.
struct TensorCoreProduct {
    TensorCoreOperand a, b;
    Expr m, n, k;
};
void tensor_core_product(KernelBuilder& k, const TensorCoreProduct& p, DType input,
                         const MatmulSchedule& s, const MatmulStore& store);

}  // namespace kiln::ops
