// The host Q8_0 quantizer (kiln/ops/matvec_q8.hpp): llama.cpp's round-to-nearest, d = max|v|/127.
#include <cmath>
#include <cstring>

#include "kiln/error.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/semantics.hpp"

namespace kiln::ops {

std::vector<uint8_t> quantize_q8_0(const std::vector<float>& values) {
    const int64_t n = static_cast<int64_t>(values.size());
    if (n % kQ8BlockValues != 0)
        fail("quantize_q8_0: {} values; expected a multiple of {}", n, kQ8BlockValues);
    std::vector<uint8_t> out(static_cast<size_t>(n / kQ8BlockValues * kQ8BlockBytes));
    for (int64_t b = 0; b < n / kQ8BlockValues; ++b) {
        const float* v = values.data() + b * kQ8BlockValues;
        float amax = 0;
        for (int i = 0; i < kQ8BlockValues; ++i) amax = std::fmax(amax, std::fabs(v[i]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        uint8_t* block = out.data() + b * kQ8BlockBytes;
        const uint16_t h = semantics::f32_to_f16(d);
        std::memcpy(block, &h, 2);
        for (int i = 0; i < kQ8BlockValues; ++i) {
            const float q = std::round(v[i] * id);
            block[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
        }
    }
    return out;
}

}  // namespace kiln::ops
