// The order in which the exact class adds a contraction's terms (docs/numerics.md): one rule for
// matmul, the graph's linear, batched matmul, conv1d's implicit GEMM and attention's q·k.
//
// An output's k terms (p = 0 .. k-1, conv1d's q = ic*kernel + r) are cut into chunks of
// kChunkTerms consecutive terms from p = 0, the last possibly shorter:
//   s_c   = +0.0f, then s_c = fmaf(a_p, b_p, s_c) for each term p of chunk c, in order
//           (a term conv1d skips, a tap in the padding, leaves s_c as it is)
//   total = s_0, then total = total + s_c for c = 1, 2, ..., ceil(k / kChunkTerms) - 1
// The chunks depend on k alone, never on the device or the schedule, so a schedule may compute
// the chunks of one output in different threads or blocks (split-k) and add their sums in order
// afterwards, with the same bits as one thread walking k. With k <= kChunkTerms (every head
// dimension attention takes) the sum is the single fma chain over p in order.
#pragma once

#include <cstdint>

namespace kiln::ops {

inline constexpr int64_t kChunkTerms = 256;

// The chunks of k terms: ceil(k / kChunkTerms), at least 1.
constexpr int64_t contraction_chunks(int64_t k) {
    return k <= kChunkTerms ? 1 : (k + kChunkTerms - 1) / kChunkTerms;
}

}  // namespace kiln::ops
