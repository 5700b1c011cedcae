// The plain C++ reference of matmul (kiln/ops/matmul.hpp states the definition): for each output,
// the fma chains over k's chunks in order, their sums added in order (oracle::contraction_sum),
// then one rounding to C's dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/dtype.hpp"
#include "ops/matmul/matmul.hpp"

namespace kiln::oracle {

// C (dense: batch x m x n elements of `out`, raw bytes) from A and B, raw element bytes of
// `input` (f32, f16 or bf16) read through their views (ld 0: dense, as in ops::MatmulOperand).
std::vector<uint8_t> matmul(DType input, DType out, const std::vector<uint8_t>& a,
                            const ops::MatmulOperand& av, const std::vector<uint8_t>& b,
                            const ops::MatmulOperand& bv, const ops::MatmulShape& shape);

// The tensor-core class's bound for each output of the same problem (dense, batch x m x n):
// ops::kTensorCoreBound * k * sum_p |a_p * b_p|, summed in double. A result of the class is
// within it of matmul(input, f32, ...) in every output.
std::vector<double> matmul_tensor_core_bound(DType input, const std::vector<uint8_t>& a,
                                             const ops::MatmulOperand& av,
                                             const std::vector<uint8_t>& b,
                                             const ops::MatmulOperand& bv,
                                             const ops::MatmulShape& shape);

}  // namespace kiln::oracle
