// Plain OpenMP loops, the outside peers of bench/cpu_kernels.cpp.
#pragma once

#include <cstdint>

namespace kiln::bench {

// y[i] = (a[i] + b[i])^2 for i in [0, n), over every core.
void openmp_add_square(const float* a, const float* b, float* y, int64_t n);

}  // namespace kiln::bench
