// The plain loops kiln's CPU kernels are measured against, compiled as a user would compile them
// (-O3 -march=native -fopenmp, bench/CMakeLists.txt).
#include "peers/openmp_loops.hpp"

namespace kiln::bench {

void openmp_add_square(const float* a, const float* b, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float s = a[i] + b[i];
        y[i] = s * s;
    }
}

}  // namespace kiln::bench
