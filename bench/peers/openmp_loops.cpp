// The plain loops kiln's CPU kernels are measured against, compiled as a user would compile them
// (-O3 -march=native -fopenmp, bench/CMakeLists.txt).
#include "peers/openmp_loops.hpp"

#include <cmath>
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kiln::bench {
namespace {

[[maybe_unused]] int max_threads() {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}

}  // namespace

void openmp_copy(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

void openmp_add_square(const float* a, const float* b, float* y, int64_t n) {
    openmp_add_square_threads(0, a, b, y, n);
}

void openmp_fork_join(int threads, int64_t tasks) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < tasks; ++i) asm volatile("" ::: "memory");
}

void openmp_add_square_threads(int threads, const float* a, const float* b, float* y, int64_t n) {
#pragma omp parallel for simd num_threads(threads > 0 ? threads : max_threads()) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float s = a[i] + b[i];
        y[i] = s * s;
    }
}

void openmp_mul_broadcast(const float* a, const float* b, float* y, int64_t outer, int64_t middle,
                          int64_t inner) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t m = 0; m < middle; ++m) {
            const int64_t at = (o * middle + m) * inner;
#pragma omp simd
            for (int64_t i = 0; i < inner; ++i) y[at + i] = a[at + i] * b[o * inner + i];
        }
}

void openmp_softmax_rows(const float* x, float* y, int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t i = 0; i < n; ++i) m = std::fmax(m, xr[i]);
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < n; ++i) {
            yr[i] = std::exp(xr[i] - m);
            sum += yr[i];
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
    }
}

void openmp_layer_norm_rows(const float* x, const float* w, const float* b, float eps, float* y,
                            int64_t rows, int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < n; ++i) sum += xr[i];
        const float mean = sum / static_cast<float>(n);
        float var = 0;
#pragma omp simd reduction(+ : var)
        for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
        const float inv = 1.0f / std::sqrt(var / static_cast<float>(n) + eps);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
    }
}

void openmp_rms_norm_rows(const float* x, const float* w, float eps, float* y, int64_t rows,
                          int64_t n) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < n; ++i) sum += xr[i] * xr[i];
        const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * inv * w[i];
    }
}

}  // namespace kiln::bench
