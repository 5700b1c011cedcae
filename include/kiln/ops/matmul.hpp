// matmul, exact class, written once in the DSL: C[b] = A[b] · B[b] for b < batch, its schedule
// domain (tiles that never change the bits), a bench closure for the tuner and the tuned entry.
//
// The op, for every batch b, row i < m and column j < n (A, B in f32, f16 or bf16, one dtype;
// C in f32 or in the inputs' dtype), with k's terms in the chunks of kiln/ops/contraction_order.hpp
// (256 consecutive terms each, the last possibly shorter):
//   s_c = +0.0f;  for p in chunk c (in order):  s_c = fmaf((float)A[b,i,p], (float)B[b,p,j], s_c)
//   acc = s_0 + s_1 + ... + s_last              added left to right
//   C[b,i,j] = (C's dtype)acc                   one rounding to nearest even (none for f32)
// Each product is fused with its add (one rounding), a chunk's terms are added one at a time from
// its first, and nothing else touches the sums: no other split of k, no tree, no padding terms.
// So every schedule, device and backend computes the same bits; src/oracle/matmul.hpp is the
// reference. With k <= 256 each output is the single fma chain over p in order.
//
// Operands are views of buffers (MatmulOperand: an offset, a batch stride and a leading
// dimension, transposed or not), so transposes, batch broadcasts and slices cost no copy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "kiln/device.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ir.hpp"
#include "kiln/matmul_class.hpp"
#include "kiln/tune.hpp"

namespace kiln::ops {

// How a matrix of `rows x cols` (per batch) sits in its buffer, in elements:
//   transposed == false:  element (r, c) of batch b at offset + b*batch_stride + r*ld + c
//   transposed == true:   element (r, c) of batch b at offset + b*batch_stride + c*ld + r
// A is m x k, B is k x n, C is m x n (C is never transposed). batch_stride 0 shares one matrix
// among every batch (a broadcast). ld 0 means the dense value (cols, or rows when transposed).
struct MatmulOperand {
    int64_t offset = 0;
    int64_t batch_stride = 0;
    int64_t ld = 0;
    bool transposed = false;
};

struct MatmulShape {
    int64_t batch = 1, m = 0, n = 0, k = 0;
};

// How the work maps onto threads (never changes the result):
//   staged:  a block computes a bm x bn tile of C; each k-step of bk is first copied into shared
//            tiles (A's bm x bk, B's bk x bn, read once from memory by consecutive threads), then
//            each of the block's (bm/tm)*(bn/tn) threads adds the bk terms to its tm x tn outputs
//            held in registers (each output still one fma per p, in order, its chunk sums
//            added at the steps that end a chunk).
//   direct:  no shared tiles: each thread reads its tm rows of A and tn columns of B straight
//            from memory, one p at a time (for tiny shapes and m or n of 1).
// Staged points with prefetch load a step's values into registers while the previous step is
// summed, then store them into the tiles (one set of tiles, two barriers a step as without).
//   tensor core (the tensor-core class, f16/bf16 inputs on CUDA, matmul_tensor_core.cpp): a
//            block computes a bm x bn tile with (bm/wm)*(bn/wn) warps of a wm x wn tile each,
//            staged as above in steps of bk (pairs of inputs, prefetched), each warp's tile in
//            mma.m16n8k16 steps over k in 16s from p = 0, its fragments read by ldmatrix; with
//            S > 1 stages the shared tiles are S-fold, step i in stage i % S, issued S - 1 steps
//            ahead (an operand contiguous along k copied straight into shared memory, by
//            cp.async on CUDA), one barrier a step.
struct MatmulSchedule {
    std::string name;
    int bm = 64, bn = 64;  // block tile (outputs), multiples of tm and tn (or wm and wn)
    int bk = 8;            // staged only: k-steps per shared tile (a power of two, 1 to 64)
    int tm = 4, tn = 4;    // thread tile (outputs held in registers), 1 to 8 each; staged
                           // with tn 8, a thread's columns are two quads bn/2 apart
    bool staged = true;
    bool prefetch = false;  // staged only: the next step's loads in flight during this step
    // direct only: a thread's tn columns lie bn/tn apart instead of side by side, so adjacent
    // threads take adjacent columns (a CPU runs them as the lanes of one vector)
    bool spread = false;
    // Split-k: the grid runs every tile once for each chunk of k (kiln/ops/contraction_order.hpp),
    // each block writing its chunk's sums into a scratch buffer, and a second kernel
    // (matmul_chunk_sum_kernel) adds each output's chunk sums in order: the same bits, with
    // ceil(k/256) times the blocks for products with few outputs and a long k. The op's entry
    // runs both; a graph planner's launch (one kernel) does not take these points.
    bool split_k = false;
    int wm = 0, wn = 0;  // tensor-core points only: a warp's tile (multiples of 16 and 8)
    int stages = 1;      // tensor-core points only: sets of shared tiles (1 to 4)
    // Exact points: each output's chunk totals (kiln/ops/contraction_order.hpp) in the thread's
    // memory instead of its registers (they are touched once per chunk), and at least
    // `min_blocks` blocks an SM asked of the compiler (0: none; CUDA's launch bounds). A thread
    // of 8 x 8 outputs holds 64 totals beside its 64 accumulators: in registers they cost a
    // 256-thread block's second block an SM.
    bool totals_in_memory = false;
    int min_blocks = 0;
    // direct and spread only (a CPU's point): the block's bn/tn threads form one row and each
    // walks the block's bm/tm row tiles of tm x tn outputs chunk by chunk of k (every tile's
    // chunk c before any tile's chunk c + 1; kiln/ops/contraction_order.hpp), the totals in a
    // bm x bn block tile: a chunk's bn columns of B stay in the cache while the row tiles pass,
    // instead of all of B's column panel streaming past for every tm rows.
    bool chunk_major = false;
    // chunk_major only: the block's columns in this many tiles of bn/column_tiles, side by side;
    // each thread walks them within each chunk (every row tile of a column tile before the next
    // column tile), so a chunk's rows of A stay in the cache while the column tiles pass and a
    // strip of threads reads whole lines of B (tn vectors of adjacent columns).
    int column_tiles = 1;
    bool tensor_core() const { return wm > 0; }
    // The columns a block's row of threads covers at once: bn, or a column tile's.
    int row_columns() const { return bn / column_tiles; }
    int threads() const {
        if (tensor_core()) return (bm / wm) * (bn / wn) * 32;
        return chunk_major ? row_columns() / tn : (bm / tm) * (bn / tn);
    }
};

// The domain, in declaration order (the first is the tuner's default):
//   d1x64 d8x32              direct, one output per thread (a strip of a row; 8 x 32)
//   s32x32_k16_t2x2          staged, 256 threads of 2x2
//   s16x16_k16_t1x1          staged, 256 threads of one output (the most threads for few
//                            outputs and a long k: m x n outputs are all the parallelism there is)
//   s64x64_k8_t4x4           staged, 256 threads of 4x4
//   s64x64_k8_t8x8_m         staged, 64 threads of 8x8, totals in memory
//   s128x64_k8_t8x4          staged, 256 threads of 8x4
//   s128x128_k8_t8x8_m_b2    staged, 256 threads of 8x8, totals in memory, two blocks an SM
//   s64x64_k8_t8x8_p s128x128_k8_t8x8_p_m_b2   ... with prefetch
//   d8x128_t8x4_s            direct, 32 threads of 8x4 with spread columns (for CPUs)
//   s8x32_k64_t1x1_p         } few rows, long k: steps of 64 terms with prefetch, so each
//   s32x32_k64_t2x2_p        } thread has a step's loads in flight (a GPU's bandwidth needs them)
//   s64x64_k16_t8x8_p        64 threads of 8x8, steps of 16 terms with prefetch
//   d6x128_t6x4_s            direct, 32 threads of 6x4 with spread columns (a CPU's register tile)
//   s8x32_k64_t1x1_p_sk s32x32_k64_t2x2_p_sk   the few-rows points split by k's chunks
//   s16x64_k64_t2x4_p_sk s32x128_k32_t4x8_p_sk  ... with 8 and 32 outputs a thread
//   s128x64_k16_t8x8_p       128 threads of 8x8, steps of 16 terms with prefetch
//   s128x128_k16_t8x8_p_m_b2 256 threads of 8x8, steps of 16 with prefetch, totals in memory
//                            and two blocks an SM (_m: totals_in_memory, _bN: min_blocks N)
//   d96x128_t6x4_s_kc        d6x128_t6x4_s's tile, each thread walking 16 row tiles chunk by
//                            chunk of k (_kc: chunk_major; a CPU's large products)
//   d96x64_t6x2_s_kc4        8 threads of 6x2 (a CPU with AVX2's 16 vector registers), chunk-major
//   d192x32_t6x2_s_kc2       over 4 and 2 column tiles with B's chunk copied (_kcN: column_tiles)
const std::vector<MatmulSchedule>& matmul_variants();
// The tensor-core class's domain (CUDA devices with tensor cores), first the tuner's default:
//   tc128x128_k32_w64x32    8 warps of 64 x 32
//   tc128x256_k32_w64x64    8 warps of 64 x 64
//   tc64x128_k32_w32x64     4 warps of 32 x 64
//   tc64x64_k32_w32x32      4 warps of 32 x 32
//   tc32x32_k32_w16x16      4 warps of 16 x 16 (small shapes: the most blocks)
//   tc128x128_k32_w64x32_s2 tc64x128_k32_w32x64_s3 tc64x64_k32_w32x32_s4  ... with 2-4 stages
//   tc128x128_k16_w64x32_s4 tc128x256_k16_w64x64_s2 tc256x128_k16_w64x64_s2  steps of 16 terms
//                           (so 4 or 2 stages fit the 48 KiB of static shared memory)
//   tc16x32_k32_w16x8       4 warps of 16 x 8  } few rows, long k (a few tokens through a
//   tc16x16_k32_w16x8       2 warps of 16 x 8  } linear layer): blocks enough for every SM
//   tc256x128_k32_w64x64    8 warps of 64 x 64, A's tile the taller
const std::vector<MatmulSchedule>& matmul_tensor_core_variants();
// A point of either domain by name; kiln::Error if unknown.
const MatmulSchedule& matmul_variant(const std::string& name);
// Both domains in one list, the exact points first (one index space for a planner).
const std::vector<MatmulSchedule>& matmul_all_variants();

// The arithmetic class (kiln/matmul_class.hpp), chosen by the caller, never by the tuner:
//   exact        every point, device and backend gives the oracle's bits (above).
//   tensor_core  f16/bf16 inputs only. On a CUDA device with tensor cores (sm_80 and later)
//                each output is a chain of mma.m16n8k16 steps over k in 16s from p = 0
//                (the last zero-padded), f32 accumulators: bit-identical among the class's
//                points on one device, within kTensorCoreBound of the exact oracle. Elsewhere
//                (CPU, OpenCL, older GPUs) it runs the exact class, which is within the bound.
using kiln::MatmulClass;
const char* name(MatmulClass c);  // "exact", "tensor_core"
// The stated bound of the tensor-core class: for each output,
//   |c - oracle| <= kTensorCoreBound * k * sum_p |a_p * b_p|      (relative to f32's 2^-24)
// i.e. 4 units of f32 rounding per term of the sum of magnitudes: the hardware adds each mma's
// 16 products and its accumulator with its own alignment and rounding, where the oracle rounds
// once per fma.
inline constexpr double kTensorCoreBound = 0x1p-22;
// The points `cls` runs on `device`, a contiguous part of matmul_all_variants(): the tensor-core
// points where it has tensor cores, the exact ones otherwise (the tensor-core class runs its exact
// arithmetic there). The tuned entry, the planner and bench_matmul race this domain.
std::span<const MatmulSchedule> matmul_domain(const Device& device, MatmulClass cls);

// What a kernel is built for: the inputs' dtype, C's dtype and each operand's transposition.
struct MatmulTypes {
    DType input = DType::f32;
    DType output = DType::f32;
    bool a_transposed = false;
    bool b_transposed = false;
};
// kiln::Error unless `cls` can take these inputs (tensor_core: f16 or bf16).
void check_class(MatmulClass cls, DType input, const char* op = "matmul");

// The kernel, for a graph planner or the entry below. Parameters, in launch order:
//   a (input dtype), b (input dtype), c (output dtype)     buffers
//   m, n, k, a_offset, a_batch, lda, b_offset, b_batch, ldb, c_offset, c_batch, ldc   i32
// launched over matmul_grid() blocks; block x takes batch x / (mt*nt) and the tile of C at
// (x / nt % mt, x % nt) with mt = ceil(m/bm), nt = ceil(n/bn). Rows, columns and k-steps past
// the ends are read clamped (in bounds, never used) and never stored; the last k-step may be
// short. Its launch contract checks every operand's last element against its buffer.
// A split point's kernel (split_k) takes the same parameters, c being an f32 scratch of
// ceil(k/256) x batch x m x n elements (c_offset 0, c_batch m*n, ldc n): block x computes chunk
// x / (batch*mt*nt) of the tile x % (batch*mt*nt) into c's chunk-th batch x m x n slice. Then
// matmul_chunk_sum_kernel(C's dtype) over ceil(count/256) blocks of 256 threads, parameters
//   partial (f32, the scratch), c (C's dtype), count = batch*m*n, chunks   (i32 scalars)
// writes each C[i] = partial[0][i] + partial[1][i] + ... in order, rounded once (C dense).
ir::Kernel matmul_chunk_sum_kernel(DType output);
// Whether `schedule` can run `shape` (matmul_bench): every point but a split one whose scratch
// would pass 256 MiB (such a product has outputs enough without a split).
bool matmul_point_applies(const MatmulSchedule& schedule, const MatmulShape& shape);
// The points the op's entry races for `shape` (and bench_matmul runs by default): the class's
// domain on `device`, its split points only where k has two chunks or more and they apply.
std::vector<MatmulSchedule> matmul_points_for(const Device& device, MatmulClass cls,
                                              const MatmulShape& shape);
ir::Kernel matmul_kernel(const MatmulTypes& types, const MatmulSchedule& schedule);

int64_t matmul_grid(const MatmulShape& shape, const MatmulSchedule& schedule);
// The kernel's launch arguments after the three buffers, in order (operands with ld resolved).
std::vector<Arg> matmul_scalars(const MatmulShape& shape, const MatmulOperand& a,
                                const MatmulOperand& b, const MatmulOperand& c);

// Checks matmul's arguments: dtypes, sizes >= 1, every view inside its buffer, 32-bit indices,
// one device. kiln::Error naming the op, the shapes and what was expected.
void matmul_check(const Buffer& a, const MatmulOperand& av, const Buffer& b,
                  const MatmulOperand& bv, const MatmulShape& shape, DType out);

// One schedule as a tuner closure: allocates C (dense, batch x m x n of `out`), compiles the
// kernel (memo-cached) and launches it through kiln::time_dispatches (iters == 1: once).
Timed<Buffer> matmul_bench(Device& device, const Buffer& a, const MatmulOperand& av,
                           const Buffer& b, const MatmulOperand& bv, const MatmulShape& shape,
                           DType out, const MatmulSchedule& schedule, int iters);

// The tuned op over the domain, keyed by shape, dtypes and layouts. The buffers must outlive it.
Tuned<Buffer> matmul_tuned(Device& device, const Buffer& a, const MatmulOperand& av,
                           const Buffer& b, const MatmulOperand& bv, const MatmulShape& shape,
                           DType out, MatmulClass cls = MatmulClass::exact);

// C = A · B as a new dense buffer (batch x m x n, dtype `out`) on `device`, with the tuner's
// winner of the class's domain. Arguments are checked.
Buffer matmul(Device& device, const Buffer& a, const MatmulOperand& av, const Buffer& b,
              const MatmulOperand& bv, const MatmulShape& shape, DType out = DType::f32,
              MatmulClass cls = MatmulClass::exact, Tuner& tuner = Tuner::process_default());

// A dense operand: `batch` matrices of rows x cols, row-major, one after another; transposed:
// the operand is each one's transpose (cols x rows), read in place.
struct DenseMatrix {
    const Buffer& buffer;
    int64_t batch = 1, rows = 0, cols = 0;
    bool transposed = false;
};

// C = A · B for dense operands: checks each buffer's size, that A's k (its columns, as the
// operand) is B's k (its rows), and that the batches agree (equal, or one of them 1: shared by
// every batch); then the entry above with the matching views.
Buffer matmul(Device& device, const DenseMatrix& a, const DenseMatrix& b, DType out = DType::f32,
              MatmulClass cls = MatmulClass::exact, Tuner& tuner = Tuner::process_default());

}  // namespace kiln::ops
