// The matvec_q8 oracle.
#include "oracle/matvec_q8.hpp"

#include <cstring>

#include "kiln/error.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/semantics.hpp"
#include "oracle/test_kernels.hpp"

namespace kiln::oracle {

namespace {

constexpr int64_t kBlock = ops::kQ8BlockValues;
constexpr int64_t kBytes = ops::kQ8BlockBytes;

float block_scale(const uint8_t* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
    return semantics::f16_to_f32(h);
}

// The int32 dot product of two blocks' quants (exact in any order).
int32_t block_isum(const uint8_t* a, const uint8_t* b) {
    int32_t s = 0;
    for (int i = 0; i < kBlock; ++i)
        s += static_cast<int32_t>(static_cast<int8_t>(a[2 + i])) *
             static_cast<int32_t>(static_cast<int8_t>(b[2 + i]));
    return s;
}

// p = (dw * dx) * f32(isum): two rounded f32 multiplies, in that order.
float block_product(const uint8_t* w, const uint8_t* x) {
    const float d = block_scale(w) * block_scale(x);
    const float p = d * static_cast<float>(block_isum(w, x));
    return p;
}

}  // namespace

std::vector<float> matvec_q8(const std::vector<uint8_t>& w_q8, const std::vector<uint8_t>& x_q8,
                             int64_t rows, int64_t k) {
    if (k < 64 || k % 64 != 0) fail("oracle matvec_q8: k = {}; expected a multiple of 64", k);
    const int64_t blocks = k / kBlock, pairs = k / 64;
    if (static_cast<int64_t>(w_q8.size()) != rows * blocks * kBytes ||
        static_cast<int64_t>(x_q8.size()) != blocks * kBytes)
        fail("oracle matvec_q8: {} and {} bytes for rows = {}, k = {}", w_q8.size(), x_q8.size(),
             rows, k);
    std::vector<float> y(static_cast<size_t>(rows));
    std::vector<float> v(static_cast<size_t>(pairs));
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* wr = w_q8.data() + r * blocks * kBytes;
        for (int64_t j = 0; j < pairs; ++j) {
            const int64_t b0 = 2 * j, b1 = 2 * j + 1;
            const float p0 = block_product(wr + b0 * kBytes, x_q8.data() + b0 * kBytes);
            const float p1 = block_product(wr + b1 * kBytes, x_q8.data() + b1 * kBytes);
            v[static_cast<size_t>(j)] = p0 + p1;
        }
        y[static_cast<size_t>(r)] = canonical_fold(v, ops::kMatvecQ8Lanes, ops::kMatvecQ8Chunk,
                                                   0.0f, [](float a, float b) { return a + b; });
    }
    return y;
}

std::vector<double> dequantize_q8_0(const std::vector<uint8_t>& q8, int64_t count) {
    if (count % kBlock != 0 || static_cast<int64_t>(q8.size()) != count / kBlock * kBytes)
        fail("dequantize_q8_0: {} bytes for {} values", q8.size(), count);
    std::vector<double> out(static_cast<size_t>(count));
    for (int64_t b = 0; b < count / kBlock; ++b) {
        const uint8_t* block = q8.data() + b * kBytes;
        const double d = block_scale(block);
        for (int i = 0; i < kBlock; ++i)
            out[static_cast<size_t>(b * kBlock + i)] = d * static_cast<int8_t>(block[2 + i]);
    }
    return out;
}

}  // namespace kiln::oracle
