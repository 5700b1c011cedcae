// The matvec_q8 oracle in plain C++, in the op's canonical order (ops/matvec_q8.hpp), and
// the host Q8_0 quantizer (llama.cpp's round-to-nearest, d = max|v|/127).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::oracle {

// Quantizes f32 values (a multiple of 32 of them) to Q8_0 blocks: per block, d = max|v|/127
// stored as f16, then q_i = round(v_i / d) (round half away from zero; 0 when d is 0) as int8.
std::vector<uint8_t> quantize_q8_0(const std::vector<float>& values);

// y = W·x for W [rows x k] and x [k] as Q8_0 bytes, k a multiple of 64: per block
// p = (dw*dx)*f32(isum) in f32, per pair v = p0 + p1, then the canonical fold of the pairs.
std::vector<float> matvec_q8(const std::vector<uint8_t>& w_q8, const std::vector<uint8_t>& x_q8,
                             int64_t rows, int64_t k);

// The dequantized values of Q8_0 bytes (d * q in double), for independent checks.
std::vector<double> dequantize_q8_0(const std::vector<uint8_t>& q8, int64_t count);

}  // namespace kiln::oracle
