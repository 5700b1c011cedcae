// Kernels written as a new user writes them, with the public DSL alone (kiln/dsl.hpp and
// kiln/math.hpp): softmax, layer_norm and rms_norm over rows, a register-blocked sgemm and
// (a+b)^2. They are the CPU benchmark's workloads (bench/cpu_kernels.cpp) and are tested on
// every backend against oracle/user_kernels.hpp. The schedule (block, threads per row, tiles)
// never changes a result.
#pragma once

#include <cstdint>

#include "kiln/ir.hpp"

namespace kiln::ops {

// y[i] = (a[i] + b[i]) * (a[i] + b[i]) over f32, one element per thread.
ir::Kernel add_square(int block);

// Row kernels over rows of n f32 values, `threads` threads per row (1 up to `block`, a power of
// two; block / threads rows per block). Every fold is the canonical fold with 256 lanes, chunk 1.
//   softmax:    out = exp(x - max(x)) / sum(exp(x - max(x)))
//   layer_norm: mean = sum(x) / n, var = sum((x - mean)^2) / n,
//               out = (x - mean) * (1 / sqrt(var + eps)) * g + b      (no contraction)
//   rms_norm:   out = x * (1 / sqrt(sum(x*x) / n + eps)) * w
// Parameters: softmax (x, out); layer_norm (x, g, b, out, eps); rms_norm (x, w, out, eps).
ir::Kernel softmax_rows(int64_t n, int block, int threads);
ir::Kernel layer_norm_rows(int64_t n, int block, int threads);
ir::Kernel rms_norm_rows(int64_t n, int block, int threads);
int64_t rows_grid(int64_t rows, int block, int threads);
inline constexpr int kUserFoldLanes = 256;

// C = A . B (f32; A is M x k, B is k x n, C is M x n), each thread a register block of tm rows
// by tn columns `block` columns apart (adjacent threads, adjacent columns); each C element
// accumulates acc = fma(A[m,kk], B[kk,n], acc) for kk = 0 .. k-1 in order. M must be a multiple
// of tm and n of tn * block.
ir::Kernel sgemm_blocked(int64_t k, int64_t n, int tm, int tn, int block);
int64_t sgemm_grid(int64_t m, int64_t n, int tm, int tn, int block);

}  // namespace kiln::ops
