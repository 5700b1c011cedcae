// attention, exact class, written once in the DSL: O = softmax(Q·Kᵀ·scale + mask)·V over
// batch x heads x seq x head_dim, with the online (flash) softmax over key blocks of a size the op
// fixes; its schedule domain (mappings onto threads that never change the bits), a bench closure
// for the tuner and the tuned entry.
//
// The op, for every batch b, head h and query row i < seq_q (Q, K, V in f32, f16 or bf16, one
// dtype, each value widened to f32 exactly; O in f32 or the inputs' dtype; K and V rows of the kv
// head h / (heads / kv_heads); KB = kAttentionKeyBlock; every operation in f32, rounded to
// nearest even, no contraction but the fmaf written):
//   limit = causal ? seq_k - seq_q + i + 1 : seq_k           keys j < limit take part, the rest
//                                                             are masked: never touched at all
//   m = -inf, l = +0, acc[d] = +0 for every d < D
//   for each key block t = 0, 1, ... with t*KB < limit, its keys j in [t*KB, min(t*KB + KB,
//   limit)):
//     s_j   = dot_j * scale           dot_j = +0, then dot_j = fmaf(q[i,d], k[j,d], dot_j) for
//                                     d = 0, 1, ..., D-1 (one fma per term, in order)
//     m_new = m, then m_new = max(m_new, s_j) for j ascending   (kiln's max: NaN propagates)
//     c     = m == -inf ? 0 : w(m - m_new)
//     p_j   = w(s_j - m_new)           w(x) = x < kAttentionWeightFloor (-87) ? +0 : exp(x)
//     l     = l * c, then l = l + p_j for j ascending
//     acc[d] = acc[d] * c, then acc[d] = fmaf(p_j, v[j,d], acc[d]) for j ascending
//     m     = m_new
//   o[i,d] = acc[d] / l, rounded once to O's dtype
// exp is kiln::exp (kiln/math.hpp), written once in the DSL from + - * fma and bit operations, so
// it gives the same bits on every backend; kiln::host::exp gives them on the host. w takes the
// weights that would be subnormal (or nearly: e^-87 is about 1.6e-38) as 0, so that no device
// meets a subnormal in the softmax (x86 CPUs take microcode assists on them). Blocks past a
// row's limit are skipped (causal), never added as zeros, and a block's masked keys are left out of
// m_new, l and acc. KB depends on nothing at all, so every schedule, device and backend computes
// the same bits; src/oracle/attention.hpp is the reference.
//
// Causal attention is bottom-right aligned (query row i sees keys j <= i + seq_k - seq_q, as
// torch's for seq_q == seq_k) and needs seq_q <= seq_k, so every row sees at least one key.
// Q and O are dense batch x heads x seq_q x head_dim, K and V dense batch x kv_heads x seq_k x
// head_dim (kv_heads dividing heads: grouped-query attention; equal to heads: plain attention).
//
// The tensor-core class (AttentionOptions::arithmetic; f16/bf16 inputs on a CUDA device with
// tensor cores; elsewhere the exact class above, which lies within its bound): the same key
// blocks and steps, with
//   dot_j   a chain of mma.m16n8k16 steps over d in 16s from d = 0 (the dims past head_dim
//           zero), as matmul's tensor-core class computes it
//   s_j     kept in base 2: dot_j * (scale * log2(e)); p_j = 2^(s_j - m_new) and c = 2^(m - m_new)
//           from the device's ex2 unit (kiln::device_exp2)
//   m_new   the row's largest s_j, however grouped (max is exact)
//   l       each lane's part of the block's p_j (its 16 keys in the mma layout, in order), the
//           parts carried from block to block, and added in lane order at the end
//   acc     p_j rounded to the input dtype, then acc[d] = mma steps over the block's keys in 16s
// Every point of the class computes each row the same way (a warp's 16 rows), so the class's
// points give the same bits on one device. Its bound (oracle::attention_tensor_core_bound): for
// each output, with p*_j the exact weights and l* their sum,
//   |o - oracle| <= (2u + 8 * max_j e_j + n * 2^-23) * sum_j p*_j |v_jd| / l*
//                   + h * sum_j |v_jd| + n * 2^-126
//   e_j = scale * 2^-22 * (head_dim + 16) * sum_d |q_d k_jd|        (the score's error)
//   n = seq_k + head_dim + 16
// with u the input dtype's unit roundoff (2^-8 bf16, 2^-11 f16) and h the most a tiny p can move
// (2^-126 bf16: f32's subnormals, which the ex2 unit flushes; 2^-25 f16: half its smallest
// subnormal step); sums over the row's keys. p's rounding and the scores' error each move an
// output by at most its share of the weighted |v|; the n terms cover the f32 sums of both sides
// and f32's subnormal range. It holds for finite inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "kiln/device.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ir.hpp"
#include "kiln/matmul_class.hpp"
#include "kiln/ops/contraction_order.hpp"
#include "kiln/tune.hpp"

namespace kiln::ops {

// Keys per block of the online softmax: part of the op's definition (see above), never a knob.
inline constexpr int kAttentionKeyBlock = 64;
// Below it a softmax weight exp(x) is taken as +0 (the op's w above).
inline constexpr float kAttentionWeightFloor = -87.0f;
// The largest head_dim (a kernel is built per head_dim). Every head_dim is one chunk of
// kiln/ops/contraction_order.hpp, so each score is the single fma chain over d in order.
inline constexpr int kAttentionMaxHeadDim = 256;
static_assert(kAttentionMaxHeadDim <= kChunkTerms);

struct AttentionShape {
    int64_t batch = 1, heads = 1;
    int64_t kv_heads = 0;  // 0: heads (one K and V head per query head)
    int64_t seq_q = 0, seq_k = 0, head_dim = 0;
};

struct AttentionOptions {
    bool causal = false;
    // The scale of the scores; unset: 1.0f / sqrtf((float)head_dim) (attention_scale).
    std::optional<float> scale;
    DType out = DType::f32;  // f32 or the inputs' dtype
    // The caller's class (above): exact, or tensor_core for f16/bf16 inputs.
    MatmulClass arithmetic = MatmulClass::exact;
};

// The scale the op uses: options.scale, else 1.0f / sqrtf((float)head_dim), both steps correctly
// rounded f32 operations (the same bits on every host).
float attention_scale(const AttentionShape& shape, const AttentionOptions& options);

// How the work maps onto threads (never changes the result):
//   direct:  one thread per query row computes everything of its row in the op's order: its q in
//            registers, K and V read from memory, the block's scores in a per-thread array.
//            `rows` rows (threads) a block, rows of every (batch, head) one after another.
//   staged:  a block takes `rows` query rows of one (batch, head). Per key block, the scores
//            (rows x KB) are a tiled product: Q and K copied into shared tiles 16 dims at a time,
//            each thread holding tq x tk scores in registers, each score one fma chain over d in
//            order. Then one thread per row takes m_new and c in key order, every thread a share
//            of the block's p_j, one thread per row its l in key order, and each thread accumulates
//            tq rows x td dims of acc (td = ceil(D / (KB/tk))) from V copied into a shared tile
//            16 keys at a time, each acc one fma per key in order. (rows/tq)*(KB/tk) threads.
//   lockstep: direct, but a block's `rows` rows (threads) are of one (batch, head) and walk the
//            keys together: each key's K and V values are read once for the block and, on a CPU,
//            the rows are the lanes of one vector. Key blocks that every row of the block sees
//            whole run without a test; the others test each key against the row's limit.
//   tensor core (the tensor-core class, attention_tensor_core.cpp): `warps` warps of 16 rows
//            each (rows = 16 * warps); per key block, the block's K and V copied into shared
//            tiles of input pairs, each warp's scores and acc in mma steps, the softmax
//            statistics in the accumulators' registers.
struct AttentionSchedule {
    std::string name;
    bool staged = true;
    int rows = 64;          // query rows per block (direct: also its threads)
    int tq = 4, tk = 4;     // staged: the score tile per thread (query rows x keys)
    bool lockstep = false;  // direct only: the block's rows walk the keys together
    int warps = 0;          // tensor-core points only
    int stages = 1;         // tensor-core: key blocks of K and V in shared tiles (copies ahead)
    bool tensor_core() const { return warps > 0; }
    int threads() const {
        if (tensor_core()) return warps * 32;
        return staged ? (rows / tq) * (kAttentionKeyBlock / tk) : rows;
    }
};

// The domain, in declaration order (the first is the tuner's default):
//   d64        direct, 64 rows a block
//   s16_t1x4   staged, 16 rows, 256 threads of 1 x 4 scores
//   s32_t2x4   staged, 32 rows, 256 threads of 2 x 4
//   s64_t4x4   staged, 64 rows, 256 threads of 4 x 4
//   s64_t4x8   staged, 64 rows, 128 threads of 4 x 8
//   l16        lockstep, 16 rows of one (batch, head) a block (the CPU's point)
//   s64_t8x4   staged, 64 rows, 128 threads of 8 x 4 (long sequences: K's tile read half as
//              often per score)
//   s32_t4x4   staged, 32 rows, 128 threads of 4 x 4
const std::vector<AttentionSchedule>& attention_variants();
// The tensor-core class's domain (CUDA devices with tensor cores), first the tuner's default:
//   tc64_w4    4 warps, 64 rows a block
//   tc128_w8   8 warps, 128 rows
//   tc32_w2    2 warps, 32 rows (short sequences: more blocks)
//   tc64_w4_s2, tc32_w2_s2: the same with two stages (the next key block's K and V in flight
//              while this one is summed; their tiles fit head_dim up to 64 or so)
const std::vector<AttentionSchedule>& attention_tensor_core_variants();
// Both domains in one list, the exact points first (one index space for a planner).
const std::vector<AttentionSchedule>& attention_all_variants();
// The points `cls` runs on `device`, a contiguous part of attention_all_variants(): the
// tensor-core points where the class is tensor_core, the device has tensor cores and one of them
// fits head_dim (attention_fits); the exact ones otherwise (within the class's bound). Callers
// race those that fit.
std::span<const AttentionSchedule> attention_domain(const Device& device, MatmulClass cls,
                                                    int head_dim);
// Either domain's point by name; kiln::Error if unknown.
const AttentionSchedule& attention_variant(const std::string& name);
// Whether a point can be built for head_dim (a staged or tensor-core point's shared tiles within
// the 48 KiB every backend gives a block).
bool attention_fits(const AttentionSchedule& schedule, int head_dim);

// What a kernel is built for: the inputs' dtype, O's dtype and head_dim.
struct AttentionTypes {
    DType input = DType::f32;
    DType output = DType::f32;
    int head_dim = 64;
};

// The kernel, for a graph planner or the entry below. Parameters, in launch order:
//   q, k, v (input dtype), o (output dtype)                          buffers
//   batch, heads, kv_heads, seq_q, seq_k, causal (0 or 1)              i32
//   scale                                                              f32
// launched over attention_grid() blocks. Its launch contract checks the sizes, the buffers'
// lengths, that kv_heads divides heads and that a causal launch has seq_q <= seq_k.
ir::Kernel attention_kernel(const AttentionTypes& types, const AttentionSchedule& schedule);
int64_t attention_grid(const AttentionShape& shape, const AttentionSchedule& schedule);
// The kernel's launch arguments after the four buffers, in order.
std::vector<Arg> attention_scalars(const AttentionShape& shape, const AttentionOptions& options);

// Checks attention's arguments: dtypes, sizes, kv_heads dividing heads, the causal shape, each
// buffer's element count, 32-bit indices, one device. kiln::Error naming the op, what was wrong
// and what was expected.
void attention_check(const Buffer& q, const Buffer& k, const Buffer& v, const AttentionShape& shape,
                     const AttentionOptions& options);
// The checks of the shape, options and input dtype alone (all but the buffers'), for a graph
// builder before any buffer exists.
void attention_check_shape(const AttentionShape& shape, const AttentionOptions& options,
                           DType input);
// The kiln::Error for batch `batch`'s key length `length` outside 1 to seq_k (a graph's key
// lengths are data: found when the graph runs).
[[noreturn]] void attention_key_length_error(int64_t length, int64_t batch, int64_t seq_k);

// One schedule as a tuner closure: allocates O (dense batch x heads x seq_q x head_dim of
// options.out), compiles the kernel (memo-cached) and launches it through kiln::time_dispatches
// (iters == 1: once).
Timed<Buffer> attention_bench(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                              const AttentionShape& shape, const AttentionOptions& options,
                              const AttentionSchedule& schedule, int iters);

// The tuned op over the domain, keyed by shape, dtypes and causal. The buffers must outlive it.
Tuned<Buffer> attention_tuned(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                              const AttentionShape& shape, const AttentionOptions& options = {});

// O as a new dense buffer on `device`, with the tuner's winner. Arguments are checked.
Buffer attention(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                 const AttentionShape& shape, const AttentionOptions& options = {},
                 Tuner& tuner = Tuner::process_default());

}  // namespace kiln::ops
