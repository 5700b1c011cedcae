// The demo's kernel and its oracle: per-row sum of squares of y = a*x + sqrt(|x|), reduced with
// the canonical fold (32 lanes, chunks of 4). `threads` is the schedule: how many threads share
// one row's fold. It changes the mapping onto threads, never the bits.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir.hpp"

namespace kiln::cli {

inline constexpr int demo_block_size = 64;
inline constexpr int demo_fold_lanes = 32;
inline constexpr int demo_fold_chunk = 4;

// Kernel parameters: x (f32, rows*n), out (f32, rows), a (f32 scalar).
ir::Kernel demo_kernel(int64_t n, int threads);
// Blocks to launch for `rows` rows with a given schedule.
int64_t demo_grid(int64_t rows, int threads);
// Plain C++ in the canonical order: the result every device must match bit for bit.
std::vector<float> demo_oracle(const std::vector<float>& x, int64_t n, float a);

}  // namespace kiln::cli
