// GGUF's block formats dequantized on the host, each format's arithmetic written once, in f32
// with every operation rounded to nearest even and nothing contracted (the oracle a device's
// kernels are held to, and the values llama.cpp's reference rows and the gguf package give):
//   Q4_0 (32 values, 18 bytes: f16 d, 16 bytes of 4-bit q): y = (q - 8) * d
//   Q5_0 (32 values, 22 bytes: f16 d, 32 fifth bits, 16 bytes of 4-bit q): y = (q - 16) * d
//   Q8_0 (32 values, 34 bytes: f16 d, 32 int8 q):           y = d * q
//   Q4_K (256 values, 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes
//        of 4-bit q): for each sub-block j of 32, with its scale s_j and min m_j (6 bits each),
//        d_j = d * s_j and n_j = dmin * m_j (rounded), then y = d_j * q - n_j (two roundings)
//   Q6_K (256 values, 210 bytes: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales,
//        f16 d): q = (low | high << 4) - 32 in [-32, 31], for each sub-block j of 16 with scale
//        s_j, d_j = d * s_j (rounded), then y = d_j * q
// Plain F32, F16 and BF16 rows widen exactly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::oracle {

enum class QuantFormat { f32, f16, bf16, q4_0, q5_0, q8_0, q4_k, q6_k };

// Values and bytes per block of a format (1 and the element size for the plain ones).
int64_t quant_block_values(QuantFormat format);
int64_t quant_block_bytes(QuantFormat format);

// Every value of `bytes`, a whole number of blocks of `format`; kiln::Error otherwise.
std::vector<float> dequantize(QuantFormat format, std::span<const uint8_t> bytes);

// A block format as planar arrays a device computes its values from with maps alone: value i is
// values[i] * scales[i / block] (less mins[i / block] where the format has mins), in f32 with
// each operation rounded, which is dequantize's value bit for bit (each format's integer part
// and its per-block factor are the two operands of its one product; Q4_K's d_j and n_j are
// rounded as dequantize rounds them). Q4_0, Q5_0, Q8_0: blocks of 32 with d; Q4_K: sub-blocks of
// 32 with d_j and n_j; Q6_K: sub-blocks of 16 with d_j. The plain formats are a kiln::Error.
struct PlanarBlocks {
    int64_t block = 0;           // values per scale
    std::vector<int8_t> values;  // the integer part of each value
    std::vector<float> scales;   // one per block
    std::vector<float> mins;     // one per block, or empty
};
PlanarBlocks planar(QuantFormat format, std::span<const uint8_t> bytes);

// A K-quant super-block's integer fields, unpacked (the one reading of each layout, which
// dequantize and the matvec oracles share): value i is q[i] times its sub-block's scale, less
// its min (Q4_K); sub-blocks of 32 (Q4_K) or 16 (Q6_K).
struct Q4KBlock {
    float d, dmin;
    int scale[8], min[8];  // 6 bits each
    int q[256];            // 0..15
};
struct Q6KBlock {
    float d;
    int scale[16];  // int8
    int q[256];     // -32..31
};
Q4KBlock unpack_q4_k(const uint8_t* block);
Q6KBlock unpack_q6_k(const uint8_t* block);

}  // namespace kiln::oracle
