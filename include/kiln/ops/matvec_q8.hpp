// matvec_q8: y = W·x with W [rows x k] and x [k] in Q8_0 blocks (GGUF block_q8_0: an f16
// scale d, then 32 int8 quants; 34 bytes a block), y in f32. Written once in the DSL.
//
// Numerics, fixed by the op (the oracle is src/oracle/matvec_q8.hpp):
//   block b:  isum_b = sum of the 32 products qw*qx in int32 (dp4a over 8 packed words; exact)
//             p_b    = (f32(dw_b) * f32(dx_b)) * f32(isum_b)            (two rounded multiplies)
//   pair j:   v_j    = p_{2j} + p_{2j+1}                                 (one rounded add)
//   y_r      = the canonical fold sum of v_0 .. v_{k/64-1} with kMatvecQ8Lanes lanes and chunk
//              kMatvecQ8Chunk (docs/numerics.md), whatever the schedule.
// The fold's element is a pair of blocks (68 bytes = 17 u32 words), so every pair is 4-byte
// aligned and k must be a multiple of 64. The schedule (block size, threads per row, pairs in
// flight per lane) changes only the mapping onto threads, never a bit of y.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ir.hpp"
#include "kiln/tune.hpp"

namespace kiln::ops {

inline constexpr int kQ8BlockValues = 32;  // values per Q8_0 block
inline constexpr int kQ8BlockBytes = 34;   // f16 scale + 32 int8 quants
inline constexpr int kQ8PairWords = 17;    // two blocks as u32 words
inline constexpr int kMatvecQ8Lanes = 32;  // the canonical fold's lanes (fixed by the op)
inline constexpr int kMatvecQ8Chunk = 1;   // pairs per chunk (fixed by the op)

// Quantizes f32 values (a multiple of 32 of them) to Q8_0 blocks, as llama.cpp does: per block,
// d = max|v|/127 stored as f16, then q_i = round(v_i / d) (round half away from zero; 0 when d
// is 0) as int8. kiln::Error unless the count is a multiple of 32.
std::vector<uint8_t> quantize_q8_0(const std::vector<float>& values);

// How a row's pairs reach the lanes that fold them.
enum class MatvecForm {
    // Each lane reads its own pairs straight from memory (68-byte stride across a warp).
    pair_per_lane,
    // Each round's W rows and x are first copied into shared tiles by consecutive threads
    // (coalesced 16-byte loads where aligned), then each lane reads its pair from the tile
    // (stride 17 words: no bank conflicts). Block barriers between rounds.
    staged,
    // A warp per row reads each round's words coalesced and takes every word's masked dp4a at
    // once (the integer sums are exact, so any grouping gives the same isum); lane t then sums
    // the 9 + 8 word products of each of its pairs from a per-warp shared array. Warp barriers
    // only. Needs threads == kMatvecQ8Lanes.
    warp_words,
    // A fixed grid (blocks_per_unit blocks per compute unit) that streams W: each block copies
    // all of x into a shared tile once, then each warp takes rows in turn across the grid, round
    // by round, the next round's words loaded into registers (16-byte loads) while this round is
    // summed from the warp's tile. Needs threads == kMatvecQ8Lanes and k <= max_k.
    streamed,
    // A thread per row, or per rows_per_group consecutive rows (threads == 1), for the CPU: W and
    // x as int8 (the kernel's w and x are i8 views of the Q8_0 bytes), the rows' pairs in order,
    // each block's 32 products summed by a loop over its bytes that the C++ compiler vectorizes,
    // each row's 32 lanes' sums in a local array (pair p to lane p % 32), then the fold's tree.
    // The same numbers as every other form.
    cpu_rows,
};

// The schedule: how the one kernel maps onto threads. Never changes the result.
struct MatvecSchedule {
    int block = 64;    // threads per block
    int threads = 32;  // threads per row (the fold's threads): a power of two dividing 32 and block
    int unroll = 1;    // rounds of pairs per lane per loop step (loads in flight), 1 to 16
    MatvecForm form = MatvecForm::pair_per_lane;
    // Consecutive rows each row's thread group takes. warp_words: a warp takes them in turn,
    // loading the next row's first round while it finishes the last one (fewer, longer-lived
    // warps keep loads in flight). cpu_rows: a thread takes them at once, pair by pair, so that
    // x's pair and its two scales are read and converted once for all of them.
    int rows_per_group = 1;
    // streamed only: blocks launched per compute unit, and the largest k its x tile holds.
    int blocks_per_unit = 0;
    int max_k = 0;
    // W is a streaming buffer (KernelBuilder::streaming): read once, its lines the first the
    // cache gives up.
    bool streaming = false;
    // Blocks asked to fit on one compute unit at once (KernelBuilder::min_blocks_per_unit; 0:
    // no ask). The staged form of 128 or 256 threads asks for 768 threads' worth, so that CUDA's
    // assembler keeps a round's loads of W and x in flight before the first store to the tiles
    // (notes/design-history-2026-12-04.md).
    int min_blocks = 0;
};

struct MatvecVariant {
    const char* name;
    MatvecSchedule schedule;
};

// The variant table the tuner races: "b<block>_v<unroll>" with a warp (32 threads) per row,
// "b<block>_t<threads>_v<unroll>" for fewer threads per row, "s<block>_v<unroll>" staged,
// "w<block>_v<unroll>_r<rows per warp>" warp_words, "p<block>_v<unroll>_c<blocks per compute
// unit>_k<max_k / 1024>k" streamed, "c<block>[_r<rows per thread>]" cpu_rows; a trailing "_s"
// marks W as streaming.
std::span<const MatvecVariant> matvec_q8_variants();

// The kernel: parameters w (u32 view of W's Q8_0 bytes; i8 for cpu_rows), x (the same view of
// x's), y (f32, rows); matvec_q8_word_type gives w's and x's dtype.
// k is read from x's length at run time, so one kernel serves every shape.
ir::Kernel matvec_q8_kernel(const MatvecSchedule& schedule);
DType matvec_q8_word_type(const MatvecSchedule& schedule);
int64_t matvec_q8_grid(int64_t rows, const MatvecSchedule& schedule, int compute_units);
// Whether the schedule serves k (a streamed schedule's x tile holds k <= max_k); the tuned op
// offers only the variants that do.
bool matvec_q8_serves(const MatvecSchedule& schedule, int64_t k);

// Checks a shape before anything is sized from it: rows >= 1, k a positive multiple of 64, and
// W's rows*k/32*34 bytes within int64 and within what the kernel indexes (INT32_MAX bytes).
// Returns W's bytes; kiln::Error naming the op, the values and the limit.
int64_t matvec_q8_check_shape(int64_t rows, int64_t k);

// Checks shapes and buffers: u8 buffers of rows*k/32*34 and k/32*34 bytes, k a positive
// multiple of 64, rows >= 1, everything on `device`. kiln::Error naming the op and the values.
void check_matvec_q8_args(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows,
                          int64_t k);

// One variant: iters == 1 runs once; iters > 1 benchmarks (kiln::time_dispatches).
Timed<Buffer> matvec_q8_bench(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows,
                              int64_t k, const MatvecSchedule& schedule, int iters);

// The tuned op with every variant, keyed "rows=R,k=K"; each variant's identity is its kernel's
// structural hash. The buffers must outlive it. Arguments are checked.
Tuned<Buffer> matvec_q8_tuned(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows,
                              int64_t k);
// The tuned entry point: races the variant table once per (device, rows, k), then runs the winner.
Buffer matvec_q8(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows, int64_t k,
                 Tuner& tuner = Tuner::process_default());

}  // namespace kiln::ops
