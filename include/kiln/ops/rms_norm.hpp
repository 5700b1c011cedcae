// rms_norm, written once in the DSL: its numerical definition, its variant table (schedules that
// never change the bits), a bench closure for the tuner and the tuned entry point.
//
// The op, for rows r of length n (storage dtype F = f32, f16 or bf16; all arithmetic in f32,
// each operation rounded to nearest even; no contraction):
//   v_i  = (float)x[r, i]                          exact widening of the storage value
//   ss   = canonical fold sum over i in [0, n) of v_i * v_i, in f32, with lanes W = 256 and
//          chunk V = 1 (rms_norm_fold(n)): lane j takes i = j, j+256, j+512, ... left to right
//          from +0, then the halving tree lane[j] += lane[j+s], s = 128 ... 1
//   mean = ss / (float)n
//   inv  = 1.0f / sqrtf(mean + eps)               correctly rounded sqrt and division
//   out[r, i] = (F)((v_i * inv) * (float)w[i])    two products, then one rounding to F
// eps is an f32 scalar, finite and >= 0. W and V depend on nothing (not even n), so every
// schedule, device and backend computes the same bits; src/oracle/rms_norm.hpp is the reference.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ir.hpp"
#include "kiln/tune.hpp"

namespace kiln::ops {

// The canonical fold of the sum of squares (lanes 256, chunk 1; threads and unroll left at 1).
// Chunk 1 makes the lanes of a warp or block read consecutive elements: coalesced loads.
Fold rms_norm_fold(int64_t n);

// A schedule: how rows map onto threads. Never changes the result.
struct RmsNormSchedule {
    std::string name;
    int block = 64;           // threads per block
    int threads = 1;          // threads per row (the fold's threads): 1, a warp (32) or the block
    int rows_per_thread = 1;  // rows per thread group, unrolled at comptime
    int unroll = 1;           // the fold's unroll: rounds of loads in flight per loop step
    // Block per row only: keep the row in shared memory as the fold reads it, so the normalize
    // pass reads it from there instead of from cache. Used when the row fits (at most
    // kRowCacheBytes); otherwise the variant runs exactly as without it.
    bool cache_row = false;
    // Block per row only: load this thread's elements of w into registers before the fold, so
    // their latency hides behind it. Used when the normalize pass is unrolled at comptime (at
    // most 32 elements a thread); otherwise the variant runs exactly as without it.
    bool prefetch_w = false;
    // Block per row of 256 threads (the fold's lanes) only: each thread keeps its elements of the
    // row in registers (it is exactly one lane of the fold), so x is read once and nothing goes
    // through shared memory. Used when that is at most 32 elements a thread; otherwise the variant
    // runs as a plain block per row.
    bool row_in_registers = false;
    // Row in registers only: threads per fold lane (1 or 2; block = 256 * lane_threads). A
    // lane's elements are split into lane_threads consecutive runs, one per thread, and the
    // lane's ordered sum is relayed from run to run through shared memory, so the sum is the
    // lane's exactly while each thread holds a fraction of the row (fewer registers, more
    // threads in flight per SM). Four runs serialize four relay stages and are not offered
    // (notes/design-history-2026-12-04.md).
    int lane_threads = 1;
    // Vector lanes (2 or 4; 0 = off), f32 only: each of a row's 256 / vector_lanes threads is
    // that many adjacent lanes of the fold, so it reads the row with one wide load per step
    // (elements Q*t ... Q*t+Q-1, then 256 further on, ...), sums each of its lanes in order and
    // keeps the row in registers; the lane sums reach the fold's tree through shared memory.
    // Needs threads = 256 / vector_lanes, one row per thread group and n a multiple of
    // vector_lanes with at most 64 elements a thread; otherwise (or for f16 and bf16) the variant
    // runs as a plain fold of `threads` threads per row. prefetch_w loads w the same way before
    // the fold.
    int vector_lanes = 0;
    // x's loads ask the caches to keep its lines (KernelBuilder::keep_cached; CUDA evict_last).
    bool keep_x = false;
};

inline constexpr int64_t kRowCacheBytes = 32 * 1024;

// Every variant, in declaration order (the first is the tuner's default):
//   b64_r1 b128_r1 b256_r1 b64_r2     one thread per row (CPU-friendly)
//   warp_b128 warp_b256 warp_b128_u2 warp_b256_u2   a warp per row
//   block_b256 block_b256_u2 block_b256_u4 block_b256_u8 block_b128_u4 block_b128_u8
//                                     the whole block per row
//   block_b256_c block_b256_u4_c      ... keeping the row in shared memory
//   block_b256_u4_cw block_b256_u16_cw  ... and loading w before the fold
//   block_b256_r block_b256_rw        ... keeping the row in registers (and loading w early)
//   block_b512_rw2                    ... split between two threads per fold lane
//   vec2_b128 vec2_b128_w vec4_b64_w  ... each thread 2 or 4 adjacent lanes, read and written
//                                     with 8- or 16-byte accesses (and w loaded early)
//   block_b256_rw_k block_b512_rw2_k vec2_b128_k vec2_b128_wk
//                                     ... with x's lines kept in the caches (keep_x)
const std::vector<RmsNormSchedule>& rms_norm_variants();
const RmsNormSchedule& rms_norm_variant(const std::string& name);  // kiln::Error if unknown

// The kernel: parameters x (F, rows*n), w (F, n), out (F, rows*n), eps (f32 scalar).
ir::Kernel rms_norm_kernel(DType type, int64_t n, const RmsNormSchedule& schedule);
int64_t rms_norm_grid(int64_t rows, const RmsNormSchedule& schedule);

// Checks a shape before anything is sized from it: rows >= 0, n in [1, INT32_MAX], rows * n
// elements of `type` within int64 and within what the kernel indexes (INT32_MAX elements).
// Returns rows * n; kiln::Error naming the op, the values and the limit.
int64_t rms_norm_check_shape(DType type, int64_t rows, int64_t n);

// Checks rms_norm's arguments; kiln::Error naming the op and the offending values.
void rms_norm_check(const Buffer& x, const Buffer& w, int64_t n, float eps);

// One variant as a tuner closure: allocates the output, compiles (memory-cached), launches
// through kiln::time_dispatches (iters == 1: exactly one launch) and returns the output.
Timed<Buffer> rms_norm_bench(Device& device, const Buffer& x, const Buffer& w, int64_t rows,
                             int64_t n, float eps, const RmsNormSchedule& schedule, int iters);

// The tuned op with every variant, keyed "rows=R,n=N,dtype=F"; each variant's identity is the
// structural hash of its kernel. x and w must outlive it. Arguments are checked.
Tuned<Buffer> rms_norm_tuned(Device& device, const Buffer& x, const Buffer& w, int64_t n,
                             float eps);

// out = rms_norm(x, w) on `device`, with the tuner's winner (tuning on a miss, all variants
// compiled in one compiler run). rows == 0 returns an empty buffer.
Buffer rms_norm(Device& device, const Buffer& x, const Buffer& w, int64_t n, float eps,
                Tuner& tuner = Tuner::process_default());

}  // namespace kiln::ops
