// The matvec_q8 oracle in plain C++, in the op's canonical order (kiln/ops/matvec_q8.hpp).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::oracle {

// y = W·x for W [rows x k] and x [k] as Q8_0 bytes, k a multiple of 64: per block
// p = (dw*dx)*f32(isum) in f32, per pair v = p0 + p1, then the canonical fold of the pairs.
std::vector<float> matvec_q8(const std::vector<uint8_t>& w_q8, const std::vector<uint8_t>& x_q8,
                             int64_t rows, int64_t k);

// The dequantized values of Q8_0 bytes (d * q in double), for independent checks.
std::vector<double> dequantize_q8_0(const std::vector<uint8_t>& q8, int64_t count);

}  // namespace kiln::oracle
