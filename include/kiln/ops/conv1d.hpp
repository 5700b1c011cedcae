// conv1d, exact class, written once in the DSL: y = conv1d(x, w) over batch x channels x length
// (PyTorch's layouts), with stride, padding, dilation and groups; its schedule domain (tiles that
// never change the bits), a bench closure for the tuner and the tuned entry.
//
// The op. x is batch x c_in x length, w is c_out x (c_in/groups) x kernel, y is batch x c_out x
// l_out with l_out = floor((length + 2*padding - dilation*(kernel-1) - 1) / stride) + 1. Inputs
// f32, f16 or bf16 (one dtype); y in f32 or in the inputs' dtype. With cg = c_in/groups and
// og = c_out/groups, for every output (n, oc, t), g = oc / og, the terms q = ic*kernel + r
// (q from 0 to cg*kernel - 1) in the chunks of kiln/ops/contraction_order.hpp (256 consecutive
// terms each, the last possibly shorter):
//   s_c = +0.0f
//   for q in chunk c (in this order), ic = q / kernel, r = q % kernel:
//       pos = t*stride - padding + r*dilation
//       if 0 <= pos < length:  s_c = fmaf((float)x[n, g*cg + ic, pos], (float)w[oc, ic, r], s_c)
//   acc = s_0 + s_1 + ... + s_last              added left to right (a chunk of taps that are
//                                               all in the padding adds its +0)
//   y[n, oc, t] = (y's dtype)acc                one rounding to nearest even (none for f32)
// Each product is fused with its add (one rounding), a chunk's terms are added one at a time in
// (ic, r) order, and nothing else touches the sums: no other split of the terms, no tree, and taps
// that fall in the padding are skipped, never added as zeros (an fma with a zero can turn -0 into
// +0, and 0 * inf is NaN). Padding is an index condition: no padded copy of x is made. So every
// schedule, device and backend computes the same bits; src/oracle/conv1d.hpp is the reference.
//
// The terms of an output are matmul's over k = cg*kernel, q = ic*kernel + r: w is matmul's A
// (c_out x k, row-major) and x read through the taps' index map its B (implicit GEMM).
//
// The tensor-core class (the caller's `MatmulClass`; f16/bf16 inputs on a CUDA device with tensor
// cores; elsewhere the exact class above): that implicit GEMM as matmul's tensor-core class
// computes it, each output a chain of mma.m16n8k16 steps over q in 16s from q = 0, a tap in the
// padding (and q past k) an exact zero term. Its points give the same bits on one device, within
// matmul's bound of the exact oracle: |y - oracle| <= kTensorCoreBound * k * sum |w x| over the
// output's taps inside x (oracle::conv1d_tensor_core_bound), for finite inputs.
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

// The convolution's parameters, as torch.nn.functional.conv1d's (padding on both sides).
struct Conv1dParams {
    int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
};

// The problem: x is batch x in_channels x length, w is out_channels x (in_channels/groups) x
// kernel.
struct Conv1dShape {
    int64_t batch = 1, in_channels = 0, length = 0, out_channels = 0, kernel = 0;
    Conv1dParams params;
    // floor((length + 2*padding - dilation*(kernel-1) - 1) / stride) + 1, computed in int64 for
    // sizes of at most 2^31 (conv1d_check rejects larger ones first); < 1 when the kernel is
    // longer than the padded input.
    int64_t out_length() const;
};

// How x (batch x channels x length) or y sits in its buffer, in elements: element (n, c, l) at
// offset + n*batch_stride + c*channel_stride + l (positions along the length are adjacent).
// batch_stride 0 shares one batch among every batch (a broadcast); channel_stride 0 means the
// dense value (the length).
struct Conv1dView {
    int64_t offset = 0;
    int64_t batch_stride = 0;
    int64_t channel_stride = 0;
};

// How the work maps onto threads (never changes the result). A block computes a bm x bn tile of
// y for one batch: bm output channels (of one group) by bn positions along the length.
//   staged:  the implicit GEMM. The terms go in steps of bk; each step copies w's bm x bk and the
//            step's taps of x for the block's bn positions (x read by consecutive threads along
//            the length) into shared tiles, then each of the block's (bm/tm)*(bn/tn) threads
//            adds the bk terms to its tm x tn outputs held in registers. Blocks whose taps all
//            fall inside x sum without a test; the blocks at the ends of the length test each
//            tap and skip those in the padding.
//   direct:  no shared tiles: each thread holds tm output channels at one position (tn = 1) and
//            reads x and w straight from memory, looping r over its position's taps inside x
//            (for tiny shapes: one cheap launch).
//   spread:  direct, each thread holding tm channels at tn positions bn/tn apart, so adjacent
//            threads take adjacent positions (on a CPU, the lanes of one vector). The terms run
//            in order in loops every thread of the block shares; a block whose tile lies inside
//            its group's channels and y, with every tap inside x and stride 1, reads x and w as
//            they are (i64 indices: adjacent threads' positions are adjacent addresses); the
//            others read clamped and test each tap, skipping those in the padding.
//   tensor core (the tensor-core class): the implicit GEMM in matmul's tensor-core kernel, a
//            block's bm x bn tile in (bm/wm)*(bn/wn) warps of wm x wn, steps of bk terms staged
//            as pairs in shared tiles.
struct Conv1dSchedule {
    std::string name;
    int bm = 64, bn = 64;  // block tile (output channels x positions), multiples of tm and tn
    int bk = 8;            // staged only: terms per step (a power of two, 1 to 64)
    int tm = 4, tn = 4;    // thread tile (outputs held in registers), 1 to 8 each
    bool staged = true;
    bool spread = false;  // direct only: a thread's positions bn/tn apart
    int wm = 0, wn = 0;   // tensor-core points only: a warp's tile
    // Exact points, as matmul's (kiln/ops/matmul.hpp): the chunk totals in the thread's memory
    // (`_m` in the name), at least min_blocks blocks an SM asked of the compiler (`_bN`).
    bool totals_in_memory = false;
    int min_blocks = 0;
    bool tensor_core() const { return wm > 0; }
    int threads() const {
        return tensor_core() ? (bm / wm) * (bn / wn) * 32 : (bm / tm) * (bn / tn);
    }
};

// The domain, in declaration order (the first is the tuner's default):
//   d1x128 d8x64                 direct: 128 threads of one output, 64 threads of 8 channels
//   s32x32_k16_t2x2              staged, 256 threads of 2x2
//   s64x64_k8_t4x4               staged, 256 threads of 4x4
//   s64x128_k8_t4x8              staged, 256 threads of 4x8
//   s128x128_k8_t8x8_m_b2        staged, 256 threads of 8x8, totals in memory, two blocks an SM
//   d8x128_t8x4_s                spread, 32 threads of 8 channels x 4 positions (the CPU's point)
//   d4x128_t4x4_s                spread, 32 threads of 4 x 4: 16 accumulators, which stay in the
//                                vector registers of a CPU (8 x 4 spills some every term)
const std::vector<Conv1dSchedule>& conv1d_variants();
// The tensor-core class's domain (CUDA devices with tensor cores), first the tuner's default:
//   tc128x128_k32_w64x32   8 warps of 64 x 32
//   tc64x128_k32_w32x64    4 warps of 32 x 64
//   tc64x64_k32_w32x32     4 warps of 32 x 32
//   tc32x32_k32_w16x16     4 warps of 16 x 16 (small shapes: the most blocks)
const std::vector<Conv1dSchedule>& conv1d_tensor_core_variants();
// Both domains in one list, the exact points first (one index space for a planner).
const std::vector<Conv1dSchedule>& conv1d_all_variants();
// The points `cls` runs on `device`, a contiguous part of conv1d_all_variants(): the
// tensor-core points where the class is tensor_core and the device has tensor cores, the exact
// ones otherwise (within the class's bound).
std::span<const Conv1dSchedule> conv1d_domain(const Device& device, MatmulClass cls);
// Either domain's point by name; kiln::Error if unknown.
const Conv1dSchedule& conv1d_variant(const std::string& name);

// What a kernel is built for: the inputs' dtype and y's.
struct Conv1dTypes {
    DType input = DType::f32;
    DType output = DType::f32;
};

// The kernel, for a graph planner or the entry below. Parameters, in launch order:
//   x (input dtype), w (input dtype), y (output dtype)        buffers
//   batch, in_channels, length, out_channels, kernel, stride, padding, dilation, groups,
//   x_offset, x_batch, x_channel, y_offset, y_batch, y_channel                      i32
// w is dense (out_channels x in_channels/groups x kernel from element 0); x and y are views.
// Launched over conv1d_grid() blocks; block b takes the tile at position b % nt along the
// length and (b / nt) % mt among its group's channels, of group (b / (nt*mt)) % groups and batch
// b / (nt*mt*groups), with nt = ceil(l_out/bn), mt = ceil(og/bm). Channels and positions past a
// group's or the length's end are read clamped (in bounds, never used) and never stored. Its
// launch contract checks the parameters and every view against its buffer.
ir::Kernel conv1d_kernel(const Conv1dTypes& types, const Conv1dSchedule& schedule);
int64_t conv1d_grid(const Conv1dShape& shape, const Conv1dSchedule& schedule);
// The kernel's launch arguments after the three buffers, in order (strides of 0 resolved).
std::vector<Arg> conv1d_scalars(const Conv1dShape& shape, const Conv1dView& x, const Conv1dView& y);

// Checks conv1d's arguments: dtypes, sizes, parameters, groups dividing the channels, a kernel
// that fits the padded input, x's view inside x, w's size, 32-bit indices, one device. kiln::Error
// naming the op, the values and what was expected.
void conv1d_check(const Buffer& x, const Conv1dView& xv, const Buffer& w, const Conv1dShape& shape,
                  DType out);
// The checks of the shape alone (sizes, parameters, groups, a kernel that fits the padded input,
// 32-bit indices), for a graph builder before any buffer exists.
void conv1d_check_shape(const Conv1dShape& shape);

// One schedule as a tuner closure: allocates y (dense, batch x out_channels x l_out of `out`),
// compiles the kernel (memo-cached) and launches it through kiln::time_dispatches (iters == 1:
// once).
Timed<Buffer> conv1d_bench(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
                           const Conv1dShape& shape, DType out, const Conv1dSchedule& schedule,
                           int iters);

// The tuned op over the class's domain, keyed by shape, parameters, dtypes and class. The
// buffers must outlive it.
Tuned<Buffer> conv1d_tuned(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
                           const Conv1dShape& shape, DType out,
                           MatmulClass cls = MatmulClass::exact);

// y = conv1d(x, w) as a new dense buffer (batch x out_channels x l_out, dtype `out`) on
// `device`, with the tuner's winner. Arguments are checked.
Buffer conv1d(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
              const Conv1dShape& shape, DType out = DType::f32,
              MatmulClass cls = MatmulClass::exact, Tuner& tuner = Tuner::process_default());

// Dense operands, as torch tensors: x is batch x channels x length, w is out_channels x
// in_channels x kernel (in_channels: per group), each buffer exactly that size.
struct Conv1dInput {
    const Buffer& buffer;
    int64_t batch = 1, channels = 0, length = 0;
};
struct Conv1dWeight {
    const Buffer& buffer;
    int64_t out_channels = 0, in_channels = 0, kernel = 0;
};

// y = conv1d(x, w) for dense operands: checks each buffer's size and that w's in_channels is
// x's channels / groups; then the entry above.
Buffer conv1d(Device& device, const Conv1dInput& x, const Conv1dWeight& w,
              const Conv1dParams& params = {}, DType out = DType::f32,
              MatmulClass cls = MatmulClass::exact, Tuner& tuner = Tuner::process_default());

}  // namespace kiln::ops
