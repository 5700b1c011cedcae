// matmul's kernel body for callers that declare their own parameters (the graph planner's launches
// with fused prologues and epilogues); the op itself is declared in kiln/ops/matmul.hpp.
#pragma once

#include <functional>
#include <optional>

#include "kiln/dsl.hpp"
#include "kiln/ops/matmul.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops {

// The kernel's work for a caller that declares its own parameters (a graph planner's launch):
// the operands as views (as in MatmulOperand, ld resolved) of arrays a and b of the input dtype,
// and the sizes, as parameters or constants; `store(batch, row, col, acc)` runs once for each
// output in range with its f32 value (the caller rounds it). Launched over matmul_grid() blocks of
// schedule.threads(); a and b as ElementReads (ops/kernel_parts.hpp).
struct MatmulViews {
    ElementRead a, b;
    Expr batch, m, n, k;
    Expr a_offset, a_batch, lda, b_offset, b_batch, ldb;
    // The block index the tile is taken from (k.block_index() where unset): a split point's
    // kernel runs the body once per chunk of k over the same tiles.
    std::optional<Expr> block;
};
using MatmulStore =
    std::function<void(const Expr& batch, const Expr& row, const Expr& col, const Expr& acc)>;
void matmul_body(KernelBuilder& k, const MatmulViews& views, const MatmulTypes& types,
                 const MatmulSchedule& schedule, const MatmulStore& store);

// A split point's work (MatmulSchedule::split_k), launched over matmul_grid() blocks: block x
// computes chunk x / tiles of k (kiln/ops/contraction_order.hpp) for the tile x % tiles (tiles =
// batch * ceil(m/bm) * ceil(n/bn)); `store(chunk, batch, row, col, sum)` runs once for each
// output in range with the chunk's f32 sum.
using MatmulChunkStore = std::function<void(const Expr& chunk, const Expr& batch, const Expr& row,
                                            const Expr& col, const Expr& sum)>;
void matmul_chunks_body(KernelBuilder& k, const MatmulViews& views, const MatmulTypes& types,
                        const MatmulSchedule& schedule, const MatmulChunkStore& store);
// An output's total from its chunk sums in the op's order: +0 ... from -0.0f, then
// total + sum_of(0), total + sum_of(1), ... for `chunks` chunks (so the total of one chunk is its
// sum as it is).
Expr chunk_total(KernelBuilder& k, const Expr& chunks, const std::function<Expr(Expr)>& sum_of);

// On the CPU, walking down k through b's rows when they are a multiple of 1 KiB apart reuses a
// few cache sets (notes/cpu-padded-operand-2026-12-06.md): such a b is read from a copy with rows
// kPaddedRowBytes longer. Whether device does so for b's rows `ld` elements of `size` bytes
// apart, with m rows of a and k terms: where the copy is made anyway (`copied`: a transpose) or
// pays for itself (m >= 256, k >= 1024). The copy moves elements only: the bits are unchanged.
inline constexpr int64_t kPaddedRowBytes = 64;
bool pads_b_rows(const Device& device, int64_t ld, int64_t size, int64_t m, int64_t k, bool copied);

}  // namespace kiln::ops
