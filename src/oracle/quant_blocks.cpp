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

// Each block format split into its planar parts (quant_blocks.hpp's PlanarBlocks) for one block:
// the integer part of each value, and each sub-block's scale and min (mins stay untouched by the
// formats without them).
void q8_0_split(const uint8_t* b, int8_t* v, float* scale, float*) {
    scale[0] = half_at(b);
    for (int i = 0; i < 32; ++i) v[i] = static_cast<int8_t>(b[2 + i]);
}

// Q4_0: f16 d, 16 bytes of nibbles; value j the low nibble of byte j, value j + 16 the high one.
void q4_0_split(const uint8_t* b, int8_t* v, float* scale, float*) {
    scale[0] = half_at(b);
    for (int j = 0; j < 16; ++j) {
        v[j] = static_cast<int8_t>((b[2 + j] & 0xF) - 8);
        v[j + 16] = static_cast<int8_t>((b[2 + j] >> 4) - 8);
    }
}

// Q5_0: f16 d, 4 bytes of fifth bits (bit j of the u32 for value j), 16 bytes of nibbles.
void q5_0_split(const uint8_t* b, int8_t* v, float* scale, float*) {
    scale[0] = half_at(b);
    uint32_t high;
    std::memcpy(&high, b + 2, 4);
    for (int j = 0; j < 16; ++j) {
        v[j] = static_cast<int8_t>(((b[6 + j] & 0xF) | (((high >> j) & 1) << 4)) - 16);
        v[j + 16] = static_cast<int8_t>(((b[6 + j] >> 4) | (((high >> (j + 16)) & 1) << 4)) - 16);
    }
}

void q4_k_split(const uint8_t* b, int8_t* v, float* scale, float* min) {
    const Q4KBlock u = unpack_q4_k(b);
    for (int j = 0; j < 8; ++j) {
        scale[j] = u.d * static_cast<float>(u.scale[j]);
        min[j] = u.dmin * static_cast<float>(u.min[j]);
    }
    for (int i = 0; i < 256; ++i) v[i] = static_cast<int8_t>(u.q[i]);
}

void q6_k_split(const uint8_t* b, int8_t* v, float* scale, float*) {
    const Q6KBlock u = unpack_q6_k(b);
    for (int j = 0; j < 16; ++j) scale[j] = u.d * static_cast<float>(u.scale[j]);
    for (int i = 0; i < 256; ++i) v[i] = static_cast<int8_t>(u.q[i]);
}

// A format's block: its values and bytes, and either how one plain value widens or how one
// block splits (sub-blocks of `sub_block` values, with mins or not).
struct FormatRow {
    int64_t values, bytes;
    void (*value)(const uint8_t*, float*) = nullptr;
    void (*split)(const uint8_t*, int8_t*, float*, float*) = nullptr;
    int64_t sub_block = 0;
    bool has_mins = false;
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
            return {32, 18, nullptr, q4_0_split, 32};
        case QuantFormat::q5_0:
            return {32, 22, nullptr, q5_0_split, 32};
        case QuantFormat::q8_0:
            return {32, 34, nullptr, q8_0_split, 32};
        case QuantFormat::q4_k:
            return {256, 144, nullptr, q4_k_split, 32, true};
        case QuantFormat::q6_k:
            return {256, 210, nullptr, q6_k_split, 16};
    }
    fail("internal: unknown quant format");
}

int64_t whole_blocks(const FormatRow& row, std::span<const uint8_t> bytes, const char* what) {
    const auto size = static_cast<int64_t>(bytes.size());
    if (size % row.bytes != 0)
        fail("{}: {} bytes; expected a whole number of {}-byte blocks", what, size, row.bytes);
    return size / row.bytes;
}

}  // namespace

// Q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and mins (sub-blocks 0..3 in the low 6
// bits of bytes 0..3 and 4..7; 4..7 in the nibbles of bytes 8..11 with their top 2 bits in the
// high bits of bytes 0..7), then four runs of 32 bytes: run r's low nibbles are sub-block 2r,
// its high nibbles sub-block 2r + 1.
Q4KBlock unpack_q4_k(const uint8_t* b) {
    Q4KBlock u{};
    u.d = half_at(b);
    u.dmin = half_at(b + 2);
    const uint8_t* s = b + 4;
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            u.scale[j] = s[j] & 63;
            u.min[j] = s[j + 4] & 63;
        } else {
            u.scale[j] = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
            u.min[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
    }
    const uint8_t* q = b + 16;
    for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 32; ++l) {
            u.q[64 * r + l] = q[32 * r + l] & 0xF;
            u.q[64 * r + 32 + l] = q[32 * r + l] >> 4;
        }
    return u;
}

// Q6_K: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, f16 d. In each half h
// of 128 values, for l < 32: low byte 64h + l holds values l (low nibble) and 64 + l (high),
// byte 64h + 32 + l values 32 + l and 96 + l; high byte 32h + l holds the top 2 bits of values
// l, 32 + l, 64 + l, 96 + l in bit pairs 0, 2, 4, 6.
Q6KBlock unpack_q6_k(const uint8_t* b) {
    Q6KBlock u{};
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    for (int i = 0; i < 16; ++i) u.scale[i] = static_cast<int8_t>(b[192 + i]);
    u.d = half_at(b + 208);
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const uint8_t lo0 = ql[64 * h + l], lo1 = ql[64 * h + 32 + l], hi = qh[32 * h + l];
            const int low[4] = {lo0 & 0xF, lo1 & 0xF, lo0 >> 4, lo1 >> 4};
            for (int c = 0; c < 4; ++c)
                u.q[128 * h + 32 * c + l] = (low[c] | (((hi >> (2 * c)) & 3) << 4)) - 32;
        }
    return u;
}

int64_t quant_block_values(QuantFormat format) {
    return row_of(format).values;
}

int64_t quant_block_bytes(QuantFormat format) {
    return row_of(format).bytes;
}

PlanarBlocks planar(QuantFormat format, std::span<const uint8_t> bytes) {
    const FormatRow row = row_of(format);
    if (!row.split) fail("planar: a plain format has no blocks");
    const int64_t blocks = whole_blocks(row, bytes, "planar");
    const int64_t per_block = row.values / row.sub_block;
    PlanarBlocks out;
    out.block = row.sub_block;
    out.values.resize(static_cast<size_t>(blocks * row.values));
    out.scales.resize(static_cast<size_t>(blocks * per_block));
    if (row.has_mins) out.mins.resize(out.scales.size());
    for (int64_t b = 0; b < blocks; ++b)
        row.split(bytes.data() + b * row.bytes, out.values.data() + b * row.values,
                  out.scales.data() + b * per_block,
                  row.has_mins ? out.mins.data() + b * per_block : nullptr);
    return out;
}

// The block formats' values are their planar parts' (value * scale, less min): each format's
// one product and, for Q4_K, one difference, never contracted.
std::vector<float> dequantize(QuantFormat format, std::span<const uint8_t> bytes) {
    const FormatRow row = row_of(format);
    const int64_t blocks = whole_blocks(row, bytes, "dequantize");
    if (row.split) {
        const PlanarBlocks p = planar(format, bytes);
        std::vector<float> out(p.values.size());
        for (size_t i = 0; i < out.size(); ++i) {
            const size_t j = i / static_cast<size_t>(p.block);
            out[i] = static_cast<float>(p.values[i]) * p.scales[j];
            if (!p.mins.empty()) out[i] = out[i] - p.mins[j];
        }
        return out;
    }
    std::vector<float> out(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) row.value(bytes.data() + b * row.bytes, out.data() + b);
    return out;
}

}  // namespace kiln::oracle
