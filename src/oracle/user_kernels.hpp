// Plain C++ references of the user-written kernels (ops/user_kernels.hpp), in the canonical
// order. exp is kiln's (include/kiln/math.hpp), given as a batch function: the tests compute it
// with a one-line map kernel (whose bits every device shares, tests/math_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace kiln::oracle {

using BatchFn = std::function<std::vector<float>(const std::vector<float>&)>;

std::vector<float> add_square(const std::vector<float>& a, const std::vector<float>& b);
std::vector<float> softmax_rows(int64_t n, const std::vector<float>& x, const BatchFn& exp);
std::vector<float> layer_norm_rows(int64_t n, const std::vector<float>& x,
                                   const std::vector<float>& g, const std::vector<float>& b,
                                   float eps);
std::vector<float> rms_norm_rows(int64_t n, const std::vector<float>& x,
                                 const std::vector<float>& w, float eps);

}  // namespace kiln::oracle
