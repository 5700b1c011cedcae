// every_test_kernel: one of each conformance kernel (ops/test_kernels.hpp) in every dtype and a
// spread of schedules, for tests that look at or compile generated source.
#pragma once

#include <vector>

#include "kiln/dsl.hpp"
#include "ops/test_kernels.hpp"

namespace kiln::test {

inline std::vector<ir::Kernel> every_test_kernel() {
    std::vector<ir::Kernel> ks;
    for (DType t : all_dtypes) {
        ks.push_back(ops::elementwise_mix(t, 64, 1));
        ks.push_back(ops::elementwise_mix(t, 128, 4));
        ks.push_back(ops::block_reverse(t, 64));
        for (DType to : all_dtypes)
            if (to != t) ks.push_back(ops::cast_kernel(t, to, 128));
    }
    for (int threads : {1, 4, 32})
        ks.push_back(
            ops::row_fold(DType::f32, 1000, Fold::sum().lanes(32).chunk(4).threads(threads), 64));
    ks.push_back(ops::row_fold(DType::f32, 4099, Fold::sum().lanes(256).threads(256), 256));
    ks.push_back(ops::row_fold(DType::f16, 100, Fold::sum().lanes(32).chunk(2).threads(32), 64));
    ks.push_back(ops::row_fold(DType::i64, 100, Fold::max().lanes(8).threads(2), 32));
    ks.push_back(ops::row_fold(DType::u8, 100, Fold::min().lanes(4).chunk(4).threads(4), 16));
    ks.push_back(ops::tiled_matmul(17, 29, 8));
    ks.push_back(ops::comptime_poly(7, 64, 3));
    ks.push_back(ops::packed_bytes(64));
    return ks;
}

}  // namespace kiln::test
