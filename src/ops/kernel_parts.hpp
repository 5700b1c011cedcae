// Pieces the ops build their kernels from: the float dtypes an input may have (storage types,
// computed in f32), exact widening to f32, and runs of shared tiles read a vector at a time.
#pragma once

#include <vector>

#include "kiln/dsl.hpp"

namespace kiln::ops {

// f32, f16 or bf16: the float dtypes an op's inputs may have.
bool is_input_float(DType t);

// e as f32 (exact for f16 and bf16; e itself when it is f32 already).
Expr to_f32(const Expr& e);

// `count` consecutive f32 values of a shared tile from `at`, as new locals, read 4 or 2 at a time
// where `count` allows (one wide load where the target has one and `at` is aligned to it).
std::vector<Expr> read_run(KernelBuilder& k, const Memory& tile, const Expr& at, int count,
                           const char* name);

}  // namespace kiln::ops
