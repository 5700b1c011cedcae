// Plain C++ references of the conformance kernels (ops/test_kernels.hpp), in the canonical order.
// Buffers are raw element bytes of the kernel's dtypes.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/dsl.hpp"

namespace kiln::oracle {

using Bytes = std::vector<uint8_t>;

void elementwise_mix(DType type, const Bytes& a, const Bytes& b, Bytes& y);
void cast(DType from, DType to, const Bytes& x, Bytes& y);
void row_fold(DType type, int64_t n, const ir::FoldSpec& fold, const Bytes& x, Bytes& out);
void matmul(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
            const std::vector<float>& b, std::vector<float>& c);
void comptime_poly(int degree, const std::vector<float>& x, std::vector<float>& y);
void block_reverse(DType type, int block, const Bytes& x, Bytes& y);

// The canonical fold of values v[0..n) (docs/numerics.md): `lanes` lanes of `chunk`-element chunks
// folded left to right from the identity, then the halving tree.
template <typename V, typename Op>
V canonical_fold(const std::vector<V>& v, int lanes, int chunk, V identity, Op op) {
    const int64_t n = static_cast<int64_t>(v.size());
    std::vector<V> lane(static_cast<size_t>(lanes), identity);
    for (int j = 0; j < lanes; ++j)
        for (int64_t base = static_cast<int64_t>(j) * chunk; base < n;
             base += static_cast<int64_t>(lanes) * chunk)
            for (int u = 0; u < chunk && base + u < n; ++u)
                lane[static_cast<size_t>(j)] =
                    op(lane[static_cast<size_t>(j)], v[static_cast<size_t>(base + u)]);
    for (int s = lanes / 2; s >= 1; s /= 2)
        for (int j = 0; j < s; ++j)
            lane[static_cast<size_t>(j)] =
                op(lane[static_cast<size_t>(j)], lane[static_cast<size_t>(j + s)]);
    return lane[0];
}

}  // namespace kiln::oracle
