// The matvec_kquant oracle in plain C++, in the op's canonical order (kiln/ops/matvec_kquant.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ops/matvec_kquant.hpp"

namespace kiln::oracle {

// y = W·x for W [rows x k] in Q4_K or Q6_K bytes and x [k] in Q8_0 bytes: per x block j of a
// super-block the exact integer sums and p_j, the unit's value v from its pairs in order, then
// the canonical fold of the units' values.
std::vector<float> matvec_kquant(ops::KQuant format, const std::vector<uint8_t>& w,
                                 const std::vector<uint8_t>& x_q8, int64_t rows, int64_t k);

}  // namespace kiln::oracle
