// The plain C++ reference of rms_norm (kiln/ops/rms_norm.hpp states the definition): the same fold
// lanes and tree, the same f32 operations in the same order, one rounding to the storage dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/dtype.hpp"

namespace kiln::oracle {

// out[r*n + i] for every row r; x, w and out are raw element bytes of `type` (f32, f16, bf16).
void rms_norm(DType type, int64_t n, float eps, const std::vector<uint8_t>& x,
              const std::vector<uint8_t>& w, std::vector<uint8_t>& out);

}  // namespace kiln::oracle
