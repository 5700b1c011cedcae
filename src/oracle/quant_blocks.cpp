// dequantize (quant_blocks.hpp): one function per block format, in the format's own order. kiln
// builds with -ffp-contract=off, so each product and difference below is rounded on its own.
#include "oracle/quant_blocks.hpp"

#include <cstring>

#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::oracle {
namespace {

float half_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return semantics::f16_to_f32(h);
}

void q8_0_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
}

// Q4_0: f16 d, 16 bytes of nibbles; value j the low nibble of byte j, value j + 16 the high one.
void q4_0_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((b[2 + j] & 0xF) - 8) * d;
        y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
    }
}

// Q5_0: f16 d, 4 bytes of fifth bits (bit j of the u32 for value j), 16 bytes of nibbles.
void q5_0_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    uint32_t high;
    std::memcpy(&high, b + 2, 4);
    for (int j = 0; j < 16; ++j) {
        const int lo = (b[6 + j] & 0xF) | (((high >> j) & 1) << 4);
        const int hi = (b[6 + j] >> 4) | (((high >> (j + 16)) & 1) << 4);
        y[j] = static_cast<float>(lo - 16) * d;
        y[j + 16] = static_cast<float>(hi - 16) * d;
    }
}

// Sub-block j's 6-bit scale and min from Q4_K's 12 packed bytes (llama.cpp's get_scale_min_k4).
void q4_k_scale_min(int j, const uint8_t* s, int& scale, int& min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

void q4_k_block(const uint8_t* b, float* y) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* q = b + 16;
    // Four runs of 64 values: 32 bytes, their low nibbles sub-block 2r, high nibbles 2r + 1.
    for (int r = 0; r < 4; ++r) {
        for (int half = 0; half < 2; ++half) {
            int scale = 0, min = 0;
            q4_k_scale_min(2 * r + half, scales, scale, min);
            const float dj = d * static_cast<float>(scale);
            const float nj = dmin * static_cast<float>(min);
            for (int l = 0; l < 32; ++l) {
                const int v = half == 0 ? (q[32 * r + l] & 0xF) : (q[32 * r + l] >> 4);
                y[64 * r + 32 * half + l] = dj * static_cast<float>(v) - nj;  // never an fma
            }
        }
    }
}

void q6_k_block(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half_at(b + 208);
    // Two halves of 128 values; in each, l < 32 gives four values 32 apart.
    for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t lo0 = ql[64 * h + l], lo1 = ql[64 * h + l + 32], hi = qh[32 * h + l];
            const int q[4] = {
                (lo0 & 0xF) | (((hi >> 0) & 3) << 4), (lo1 & 0xF) | (((hi >> 2) & 3) << 4),
                (lo0 >> 4) | (((hi >> 4) & 3) << 4), (lo1 >> 4) | (((hi >> 6) & 3) << 4)};
            for (int k = 0; k < 4; ++k) {
                const float dj = d * static_cast<float>(scales[8 * h + l / 16 + 2 * k]);
                y[128 * h + 32 * k + l] = dj * static_cast<float>(q[k] - 32);
            }
        }
    }
}

struct FormatRow {
    int64_t values, bytes;
    void (*block)(const uint8_t*, float*);
};

void f32_value(const uint8_t* b, float* y) {
    std::memcpy(y, b, 4);
}
void f16_value(const uint8_t* b, float* y) {
    *y = half_at(b);
}
void bf16_value(const uint8_t* b, float* y) {
    uint16_t h;
    std::memcpy(&h, b, 2);
    *y = semantics::bf16_to_f32(h);
}

FormatRow row_of(QuantFormat format) {
    switch (format) {
        case QuantFormat::f32:
            return {1, 4, f32_value};
        case QuantFormat::f16:
            return {1, 2, f16_value};
        case QuantFormat::bf16:
            return {1, 2, bf16_value};
        case QuantFormat::q4_0:
            return {32, 18, q4_0_block};
        case QuantFormat::q5_0:
            return {32, 22, q5_0_block};
        case QuantFormat::q8_0:
            return {32, 34, q8_0_block};
        case QuantFormat::q4_k:
            return {256, 144, q4_k_block};
        case QuantFormat::q6_k:
            return {256, 210, q6_k_block};
    }
    fail("internal: unknown quant format");
}

}  // namespace

int64_t quant_block_values(QuantFormat format) {
    return row_of(format).values;
}

int64_t quant_block_bytes(QuantFormat format) {
    return row_of(format).bytes;
}

std::vector<float> dequantize(QuantFormat format, std::span<const uint8_t> bytes) {
    const FormatRow row = row_of(format);
    const auto size = static_cast<int64_t>(bytes.size());
    if (size % row.bytes != 0)
        fail("dequantize: {} bytes; expected a whole number of {}-byte blocks", size, row.bytes);
    const int64_t blocks = size / row.bytes;
    std::vector<float> out(static_cast<size_t>(blocks * row.values));
    for (int64_t b = 0; b < blocks; ++b)
        row.block(bytes.data() + b * row.bytes, out.data() + b * row.values);
    return out;
}

}  // namespace kiln::oracle
