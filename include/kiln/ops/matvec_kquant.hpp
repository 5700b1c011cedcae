// matvec_kquant: y = W·x with W [rows x k] in GGUF's Q4_K or Q6_K blocks and x [k] in Q8_0
// blocks (as ops::quantize_q8_0 makes them, the activation format matvec_q8 takes too), y in
// f32. Written once in the DSL; the oracle is src/oracle/matvec_kquant.hpp.
//
// x is Q8_0, not llama.cpp's Q8_K: one activation format for every quantized weight (a graph
// quantizes x once whatever the weights' formats), a scale per 32 values instead of per 256
// (smaller error), and W's sub-blocks of 32 (Q4_K) or two of 16 (Q6_K) line up with x's
// blocks, so every dot product is still an exact integer sum (dp4a).
//
// Numerics, fixed by the op. A super-block of W holds 256 values, x block j of it (j = 0..7)
// the 32 values 32j..32j+31, with f16 scale dx_j and int8 quants qx:
//   Q4_K (f16 d, dmin; 6-bit scale s_j and min m_j per sub-block j of 32; 4-bit q):
//     isum_j = sum of q*qx, bsum_j = sum of qx           (int32, exact)
//     A_j = s_j*isum_j,  B_j = m_j*bsum_j                 (int32, exact)
//     p_j = (d*dx_j)*f32(A_j) - (dmin*dx_j)*f32(B_j)      (each product rounded, then the -)
//   Q6_K (f16 d; int8 scale c_i per sub-block i of 16; 6-bit q, minus 32 in [-32, 31]):
//     A_j = c_{2j}*(sum of (q-32)*qx over sub-block 2j)
//         + c_{2j+1}*(sum over sub-block 2j+1)            (int32, exact)
//     p_j = (d*dx_j)*f32(A_j)                             (two rounded multiplies)
//   f32(A) of an int32 rounds to nearest even (exact below 2^24: all but Q6_K's extremes).
//   pair i (x blocks 2i and 2i+1 of the unit, in order):  q_i = p_{2i} + p_{2i+1}
//   unit (the fold's element): Q4_K one super-block (144 bytes = 36 words, 4 pairs), Q6_K two
//     (420 bytes = 105 words, 8 pairs: a Q6_K super-block is 210 bytes, so only a pair of them
//     is 4-byte aligned);  v = (((0 + q_0) + q_1) + ...) + q_{n-1}, each + rounded
//   y_r = the canonical fold sum of v over the row's units with kMatvecKquantLanes lanes and
//     chunk 1 (docs/numerics.md), whatever the schedule.
// k must be a multiple of 256 (Q4_K) or 512 (Q6_K). The schedule (block size, threads per row,
// units in flight per lane) changes only the mapping onto threads, never a bit of y.
#pragma once

#include <cstdint>
#include <span>

#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/ir.hpp"
#include "kiln/tune.hpp"

namespace kiln::ops {

enum class KQuant { q4_k, q6_k };

inline constexpr int kKquantBlockValues = 256;  // values per super-block (both formats)
inline constexpr int kQ4KBlockBytes = 144;      // f16 d, f16 dmin, 12 scale bytes, 128 q bytes
inline constexpr int kQ6KBlockBytes = 210;      // 128 low-bit, 64 high-bit, 16 scale bytes, f16 d
inline constexpr int kMatvecKquantLanes = 32;   // the canonical fold's lanes (fixed by the op)

const char* kquant_name(KQuant format);
// Values in one fold unit (256 for Q4_K, 512 for Q6_K): k must be a multiple of it.
int64_t kquant_unit_values(KQuant format);
// Bytes of W for rows x k (k a multiple of 256).
int64_t kquant_bytes(KQuant format, int64_t rows, int64_t k);

// The schedule: how the one kernel maps onto threads. Never changes the result.
struct MatvecKquantSchedule {
    int block = 64;    // threads per block
    int threads = 32;  // threads per row (the fold's threads): a power of two dividing 32 and block
    int unroll = 1;    // units per lane per loop step (loads in flight), 1 to 8
};

struct MatvecKquantVariant {
    const char* name;  // "b<block>_t<threads>_v<unroll>"
    MatvecKquantSchedule schedule;
};

// The variant table the tuner races (the same for both formats).
std::span<const MatvecKquantVariant> matvec_kquant_variants();

// The kernel: parameters w (u32 view of W's bytes), x (u32 view of x's Q8_0 bytes), y (f32,
// rows). k is read from x's length at run time, so one kernel serves every shape.
ir::Kernel matvec_kquant_kernel(KQuant format, const MatvecKquantSchedule& schedule);
int64_t matvec_kquant_grid(int64_t rows, const MatvecKquantSchedule& schedule);

// Checks shapes and buffers: u8 buffers of kquant_bytes(format, rows, k) and k/32*34 bytes, k a
// positive multiple of the format's unit, rows >= 1, W within INT32_MAX bytes, everything on
// `device`. kiln::Error naming the op, the values and what was expected.
void check_matvec_kquant_args(Device& device, KQuant format, const Buffer& w, const Buffer& x_q8,
                              int64_t rows, int64_t k);

// One variant: iters == 1 runs once; iters > 1 benchmarks (kiln::time_dispatches).
Timed<Buffer> matvec_kquant_bench(Device& device, KQuant format, const Buffer& w,
                                  const Buffer& x_q8, int64_t rows, int64_t k,
                                  const MatvecKquantSchedule& schedule, int iters);

// The tuned op with every variant, keyed "rows=R,k=K" under "matvec_q4_k" or "matvec_q6_k".
// The buffers must outlive it. Arguments are checked.
Tuned<Buffer> matvec_kquant_tuned(Device& device, KQuant format, const Buffer& w,
                                  const Buffer& x_q8, int64_t rows, int64_t k);
// The tuned entry point: races the variants once per (device, format, rows, k), then runs the
// winner.
Buffer matvec_kquant(Device& device, KQuant format, const Buffer& w, const Buffer& x_q8,
                     int64_t rows, int64_t k, Tuner& tuner = Tuner::process_default());

}  // namespace kiln::ops
