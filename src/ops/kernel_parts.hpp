// Pieces the ops build their kernels from: operands as element readers, the float dtypes an
// input may have (storage types, computed in f32), exact widening to f32, and runs of shared tiles
// read a vector at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "kiln/dsl.hpp"

namespace kiln::ops {

// Static shared memory a block may declare on every backend (CUDA's limit without an opt-in).
inline constexpr int64_t kMaxSharedBytes = 48 * 1024;

// A contraction body's operand: `read(e)` is element e of a dense array of the op's input dtype,
// a buffer's (buffer_elements) or a value computed there (a graph planner's prologue: a cast or a
// dequantization fused into the operand). It is called in the scope where the element is used,
// with indices in range. A buffer's reader also names the buffer, so a body may read several
// elements at once (KernelBuilder::load_vector).
struct ElementRead {
    template <typename F>
    requires std::is_invocable_r_v<Expr, const F&, const Expr&> &&
        (!std::is_same_v<std::decay_t<F>, ElementRead>)ElementRead(F read)
        : read(std::move(read)) {}
    Expr operator()(const Expr& e) const { return read(e); }

    std::function<Expr(const Expr& e)> read;
    std::optional<Memory> buffer;  // where the elements are this buffer's
};
ElementRead buffer_elements(const Memory& buffer);

// f32, f16 or bf16: the float dtypes an op's inputs may have.
bool is_input_float(DType t);

// e as f32 (exact for f16 and bf16; e itself when it is f32 already).
Expr to_f32(const Expr& e);

// An f16 (a quantized block's scale), held in the low 16 bits of a u32, as f32 (exact).
Expr half_scale(const Expr& half_bits);

// `count` consecutive f32 values of a shared tile from `at`, as new locals, read 4 or 2 at a time
// where `count` allows (one wide load where the target has one and `at` is aligned to it).
std::vector<Expr> read_run(KernelBuilder& k, const Memory& tile, const Expr& at, int count,
                           const char* name);

// A row-per-group schedule's threads per row: a power of two up to `lanes` (the fold's) that
// divides `block`; kiln::Error naming `op` otherwise.
void check_row_threads(const char* op, int threads, int lanes, int block);

}  // namespace kiln::ops
