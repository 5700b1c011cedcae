// Pieces the exact-class contractions (matmul, conv1d) build their kernels from: a thread's
// tile of accumulators and the op's one step on it (one fma per term), shared tiles filled by
// every thread of a block and the 32-bit index limits (with kernel_parts: dtypes, widening to
// f32 and runs of a tile read 2 or 4 at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kiln/dsl.hpp"
#include "kiln/ops/contraction_order.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops::contraction {

// Kernels index with i32: every element they reach is below this.
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
// The largest extent a block tile runs along: a tile's corner plus a block tile (at most 1024
// a side) stays in 32 bits.
constexpr int64_t kMaxExtent = kMaxIndex - 1024;
// Elements each row of a shared tile is padded by (a multiple of 4: runs stay 16-byte aligned).
constexpr int kTilePad = 4;

bool pow2(int v);
// Whether a * b * c (each >= 1) is at most kMaxIndex, without overflowing on the way.
bool fits_index(int64_t a, int64_t b, int64_t c);
// kiln::Error naming `op` unless the inputs are f32, f16 or bf16 and the output f32 or theirs.
void check_types(const char* op, DType input, DType output);
// kiln::Error naming `op`'s schedule `name` unless the thread tile tm x tn holds powers of two
// from 1 to 8, the block tile bm x bn powers of two that are multiples of it, and the block
// (bm/tm)*(bn/tn) threads at most 1024.
void check_tiles(const char* op, const std::string& name, int bm, int bn, int tm, int tn);
// The same unless bk, the terms of a staged step, is a power of two from 1 to 64.
void check_step(const char* op, const std::string& name, int bk);
// The same unless min_blocks (0: none asked) blocks of `threads` fit one SM (2048 threads).
void check_min_blocks(const char* op, const std::string& name, int min_blocks, int threads);
// The same where a tensor-core point asks for the exact points' register knobs (totals in
// memory, min_blocks).
void check_exact_knobs(const char* op, const std::string& name, bool tensor_core,
                       bool totals_in_memory, int min_blocks);
// At least min_blocks blocks an SM asked of the compiler, where min_blocks > 0.
void ask_min_blocks(KernelBuilder& k, int min_blocks);

// Where a thread's chunk totals live. They are touched once per chunk of terms, so a thread tile
// large enough to fill the registers (8 x 8: 64 accumulators and 64 totals) may keep them in
// memory (KernelBuilder::memory_array) and its registers for the accumulators and operands.
enum class Totals { registers, memory };

// A thread's tm x tn accumulators, row-major, and the op's steps on them
// (kiln/ops/contraction_order.hpp): for a term, acc[r][c] = fma(a[r], b[c], acc[r][c]); at the
// end of each chunk of terms, close_chunk() adds the chunk's sums to the totals.
struct Accumulators {
    std::vector<Var> acc;
    int tm, tn;
    // tm * tn accumulators, each +0.0f, and their totals, each -0.0f (so that the first chunk's
    // sum is added to -0 exactly as it is: the total is s_0, then s_0 + s_1, ...).
    Accumulators(KernelBuilder& k, int tm, int tn, Totals where = Totals::registers);
    // tm * tn accumulators, each +0.0f, whose totals are the caller's: output i's at element
    // at(i) of `totals`, which the caller set to -0.0f before the first chunk.
    Accumulators(KernelBuilder& k, int tm, int tn, const Memory& totals,
                 std::function<Expr(int i)> at);
    Var& at(int r, int c) { return acc[static_cast<size_t>(r * tn + c)]; }
    // An output's total: its value once every chunk, the last too, is closed.
    Expr value(int r, int c) const;
    // total += acc, then acc = +0.0f, for each output: the end of a chunk. Call it once for each
    // of the op's ceil(k / kChunkTerms) chunks, a chunk whose terms were all skipped too.
    void close_chunk();
    void add_term(const std::vector<Expr>& a, const std::vector<Expr>& b);
    // The same where column c's term exists (has[c]); where not, acc keeps its value: the term
    // is skipped, not added as a zero.
    void add_term_where(const std::vector<Expr>& a, const std::vector<Expr>& b,
                        const std::vector<Expr>& has);

  private:
    KernelBuilder* k_;
    std::vector<Var> total_;                 // Totals::registers
    std::optional<Memory> total_in_memory_;  // Totals::memory: tm * tn elements
    std::function<Expr(int)> total_at_;      // the caller's totals: where output i's is
    Expr total_at(int i) const { return total_at_ ? total_at_(i) : Expr(i); }
};

// body(p) for each term p in [0, terms) in order, each chunk of kChunkTerms closed at its end
// (the last too): for a thread that walks every term itself.
void chunked_terms(KernelBuilder& k, Accumulators& acc, const Expr& terms,
                   const std::function<void(Expr)>& body);
// After a step of `step` terms from p0 (step divides kChunkTerms, p0 a multiple of it): closes
// the chunk that ends there, unless the terms end there too (the caller closes the last chunk
// after its loop, once).
void close_after_step(KernelBuilder& k, Accumulators& acc, const Expr& p0, int step,
                      const Expr& terms);

// One operand's share of a shared tile: this thread's elements e = t, t + threads, ... of the
// tile's `count`, each with the tile index it fills, the line of the operand it reads and its
// term within the step. These do not depend on the step, so they are computed once. In a last,
// partial round (count not a multiple of threads) the threads past the end take the last
// element again; `has` then says whether to store it.
struct TileSlot {
    Var tile_at, line, term;
    std::optional<Expr> has;
};
std::vector<TileSlot> tile_slots(KernelBuilder& k, int count, int threads,
                                 const std::function<TileSlot(const Expr&)>& slot);
// body(), where the slot exists (under `if (*slot.has)` where it may not).
void where_slot(KernelBuilder& k, const std::optional<Expr>& has,
                const std::function<void()>& body);
// tile[slot.tile_at] = v, where the slot has an element to store.
void store_slot(KernelBuilder& k, const Memory& tile, const TileSlot& slot, const Expr& v);

}  // namespace kiln::ops::contraction
