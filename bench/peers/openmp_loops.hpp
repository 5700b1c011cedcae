// Plain OpenMP loops, the outside peers of bench/cpu_kernels.cpp and `kiln bench` on a CPU: what
// a user writes by hand, each over every core.
#pragma once

#include <cstdint>

namespace kiln::bench {

// y[i] = x[i] for i in [0, n).
void openmp_copy(const float* x, float* y, int64_t n);

// y[i] = (a[i] + b[i])^2 for i in [0, n).
void openmp_add_square(const float* a, const float* b, float* y, int64_t n);

// An OpenMP parallel loop of `tasks` empty iterations over `threads` threads: what a fork and join
// of the OpenMP runtime costs.
void openmp_fork_join(int threads, int64_t tasks);

// openmp_add_square over `threads` threads (0: as many as OpenMP's default).
void openmp_add_square_threads(int threads, const float* a, const float* b, float* y, int64_t n);

// y = a * b for a of outer x middle x inner elements and b of outer x inner (b broadcast along
// the middle axis).
void openmp_mul_broadcast(const float* a, const float* b, float* y, int64_t outer, int64_t middle,
                          int64_t inner);

// Over each of `rows` rows of n: softmax; layer_norm with weight w and bias b; rms_norm with
// weight w.
void openmp_softmax_rows(const float* x, float* y, int64_t rows, int64_t n);
void openmp_layer_norm_rows(const float* x, const float* w, const float* b, float eps, float* y,
                            int64_t rows, int64_t n);
void openmp_rms_norm_rows(const float* x, const float* w, float eps, float* y, int64_t rows,
                          int64_t n);

}  // namespace kiln::bench
