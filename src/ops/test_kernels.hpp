// Kernels of the foundation's conformance suite, each written once in the DSL. Their oracles
// are in oracle/test_kernels.hpp. Every knob (block size, elements per thread, fold threads,
// tile size, rows per thread) changes only the mapping onto threads, never the result.
#pragma once

#include <cstdint>

#include "kiln/dsl.hpp"
#include "kiln/ir.hpp"

namespace kiln::ops {

// y = mix(a, b) elementwise, each thread taking `per_thread` elements a grid apart.
// floats: fma(a, b, a) / (b*b + 1) - min(a, b) + sqrt(|max(a, b)|)
// integers: ((a*b + a) - a/b + a%b) ^ (a << (b & 7)) | (min(a, b) >> 3), plus max(a, b) - (-a)
// bool: (a && !b) || ((a != b) & (a == b))
ir::Kernel elementwise_mix(DType type, int block, int per_thread);
int64_t elementwise_grid(int64_t n, int block, int per_thread);

// y = cast<to>(x) elementwise.
ir::Kernel cast_kernel(DType from, DType to, int block);

// out[r] = fold over i in [0, n) of body(x[r*n + i]) where body is v*v for sum and v otherwise,
// with `fold.threads` threads per row (rows clamped so every thread reaches the fold's barriers).
ir::Kernel row_fold(DType type, int64_t n, const Fold& fold, int block);
int64_t row_fold_grid(int64_t rows, const Fold& fold, int block);

// C[M x N] = A[M x K] . B[K x N] in f32, tiles of tile x tile through shared memory and barriers;
// each C element accumulates acc = fma(A[m,k], B[k,n], acc) for k = 0 .. K-1 in order.
ir::Kernel tiled_matmul(int64_t n, int64_t k, int tile);
int64_t tiled_matmul_grid(int64_t m, int64_t n, int tile);

// y[i] = a polynomial in x[i] with comptime coefficients, Horner with fma, unrolled at
// comptime; `rows_per_thread` consecutive elements per thread (comptime-unrolled).
ir::Kernel comptime_poly(int degree, int block, int rows_per_thread);
int64_t comptime_poly_grid(int64_t n, int block, int rows_per_thread);
double comptime_poly_coefficient(int i);

// y = dp4a(a, b, c) + the f16 in the low half of a, widened to f32 and truncated back to i32:
// packed int8 dot products and 16-bit reinterpretation.
ir::Kernel packed_bytes(int block);

// y = x reversed within each block of `block` elements, through a shared tile and a barrier.
ir::Kernel block_reverse(DType type, int block);

}  // namespace kiln::ops
