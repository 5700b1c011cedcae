// conv1d's tensor-core class: every point of the class's domain, interpreted on the host (the
// interpreter runs the mma step) and on a CUDA device with tensor cores, lies within the stated
// bound of the exact oracle on ragged shapes (stride, padding, dilation, groups, a strided view of
// x), and the points agree bit for bit; a half output is the f32 output rounded; elsewhere the
// entry and the graph run the exact class (the oracle's bits); f32 inputs are refused; the CUDA C
// compiles for sm_90 without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "kiln/interpret.hpp"
#include "kiln/tensor.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/conv1d.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"
#include "support/float_values.hpp"
#include "support/graph_check.hpp"
#include "support/op_checks.hpp"

using namespace kiln;
using kiln::test::download;
using kiln::test::expect_compiles_for_cuda;
using kiln::test::float_at;
using kiln::test::HostBuffer;
using kiln::test::identical;
using kiln::test::random_values;
using kiln::test::upload;

namespace {

// k = 1 (one padded mma step); groups with stride, padding and dilation (k = 20: a whole step
// and a short one); k = 48 over a length past one block tile.
const ops::Conv1dShape kShapes[] = {
    {1, 1, 5, 1, 1, {}},
    {2, 8, 40, 6, 5, {2, 3, 2, 2}},
    {1, 16, 150, 33, 3, {1, 1, 1, 1}},
};

// x through a view at an odd offset with padded channels and batches.
ops::Conv1dView x_view(const ops::Conv1dShape& s) {
    return {3, s.in_channels * (s.length + 2) + 1, s.length + 2};
}

struct Inputs {
    HostBuffer x, w;
};

Inputs inputs(DType input, const ops::Conv1dShape& s, uint64_t seed) {
    const ops::Conv1dView v = x_view(s);
    const size_t x_count = size_t(v.offset + (s.batch - 1) * v.batch_stride +
                                  (s.in_channels - 1) * v.channel_stride + s.length);
    const size_t w_count = size_t(s.out_channels * s.in_channels / s.params.groups * s.kernel);
    return {random_values(input, x_count, seed), random_values(input, w_count, seed + 1)};
}

// Every output within the class's bound of the exact oracle (x read through `view`), plus
// `rounding` times the oracle's magnitude.
::testing::AssertionResult within_bound(const HostBuffer& got, const Inputs& in,
                                        const ops::Conv1dShape& s, const ops::Conv1dView& view,
                                        double rounding = 0) {
    const HostBuffer exact{DType::f32,
                           oracle::conv1d(in.x.dtype, DType::f32, in.x.bytes, view, in.w.bytes, s)};
    const std::vector<double> bound =
        oracle::conv1d_tensor_core_bound(in.x.dtype, in.x.bytes, view, in.w.bytes, s);
    for (size_t i = 0; i < bound.size(); ++i) {
        const double want = float_at(exact, i);
        const double diff = std::fabs(double(float_at(got, i)) - want);
        if (!(diff <= bound[i] + rounding * std::fabs(want)))
            return ::testing::AssertionFailure()
                   << "y[" << i << "] = " << float_at(got, i) << ", oracle " << want << ": off by "
                   << diff << ", bound " << bound[i];
    }
    return ::testing::AssertionSuccess();
}

std::vector<Arg> scalars(const ops::Conv1dShape& s) {
    return ops::conv1d_scalars(s, x_view(s), {0, s.out_channels * s.out_length(), s.out_length()});
}

size_t y_count(const ops::Conv1dShape& s) {
    return size_t(s.batch * s.out_channels * s.out_length());
}

TEST(Conv1dTensorCore, InterpretedPointsAgreeAndStayWithinTheBound) {
    uint64_t seed = 1;
    for (const auto& s : kShapes) {
        const Inputs in = inputs(DType::bf16, s, seed += 2);
        HostBuffer first;
        for (const auto& p : ops::conv1d_tensor_core_variants()) {
            SCOPED_TRACE(fmt::format("{} c_in={} length={} c_out={} kernel={}", p.name,
                                     s.in_channels, s.length, s.out_channels, s.kernel));
            const auto out =
                interpret(ops::conv1d_kernel({DType::bf16, DType::f32}, p), ops::conv1d_grid(s, p),
                          {in.x, in.w, test::poisoned(DType::f32, y_count(s))}, scalars(s));
            if (first.bytes.empty()) {
                first = out[2];
                EXPECT_TRUE(within_bound(out[2], in, s, x_view(s)));
            } else {
                EXPECT_TRUE(identical(out[2], first));
            }
        }
    }
}

TEST(Conv1dTensorCore, PointsAgreeAndStayWithinTheBoundOnTensorCores) {
    uint64_t seed = 100;
    for (Device* d : devices()) {
        if (!d->info().tensor_cores) continue;
        for (DType input : {DType::bf16, DType::f16})
            for (const auto& s : kShapes) {
                const Inputs in = inputs(input, s, seed += 2);
                const Buffer x = upload(*d, in.x), w = upload(*d, in.w);
                HostBuffer first;
                for (const auto& p : ops::conv1d_tensor_core_variants()) {
                    SCOPED_TRACE(fmt::format("{} {} {} c_in={} length={}", d->info().id, p.name,
                                             name(input), s.in_channels, s.length));
                    const HostBuffer y = download(
                        ops::conv1d_bench(*d, x, x_view(s), w, s, DType::f32, p, 1).output);
                    if (!first.bytes.empty()) {
                        EXPECT_TRUE(identical(y, first));
                        continue;
                    }
                    first = y;
                    EXPECT_TRUE(within_bound(y, in, s, x_view(s)));
                    const HostBuffer half =
                        download(ops::conv1d_bench(*d, x, x_view(s), w, s, input, p, 1).output);
                    std::vector<float> values(y.count());
                    for (size_t i = 0; i < values.size(); ++i) values[i] = float_at(y, i);
                    EXPECT_TRUE(identical(half, test::encode_floats(input, values)));
                }
            }
    }
}

TEST(Conv1dTensorCore, EntryRunsTheClassOnTensorCoresAndTheExactClassElsewhere) {
    const ops::Conv1dShape s = kShapes[1];
    const Inputs in = inputs(DType::bf16, s, 7);
    const HostBuffer exact{
        DType::f32, oracle::conv1d(DType::bf16, DType::f32, in.x.bytes, x_view(s), in.w.bytes, s)};
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const Buffer x = upload(*d, in.x), w = upload(*d, in.w);
        const HostBuffer y =
            download(ops::conv1d(*d, x, x_view(s), w, s, DType::f32, MatmulClass::tensor_core));
        if (d->info().tensor_cores)
            EXPECT_TRUE(within_bound(y, in, s, x_view(s)));
        else
            EXPECT_TRUE(identical(y, exact));
        EXPECT_EQ(ops::conv1d_domain(*d, MatmulClass::tensor_core).front().tensor_core(),
                  d->info().tensor_cores);
    }
}

// The graph's conv1d with the class, bias and gelu fused after it. Off tensor cores the resolve
// gives the exact oracle's bits; on them every plan member gives the same bits, the launch runs a
// tensor-core point and the bare conv (bf16 out) lies within the bound plus its rounding.
TEST(Conv1dTensorCore, GraphConv1dRunsTheClassInEveryMember) {
    const ops::Conv1dShape s{2, 8, 70, 12, 3, {1, 1, 1, 2}};
    const HostBuffer x = random_values(DType::bf16, size_t(2 * 8 * 70), 41);
    const HostBuffer w = random_values(DType::bf16, size_t(12 * 4 * 3), 42);
    const HostBuffer bias = random_values(DType::bf16, 12, 43);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto tensor = [&](const HostBuffer& h, const Shape& shape) {
            return Tensor::from_bytes(h.bytes.data(), h.count(), DType::bf16, shape, *d);
        };
        const Tensor xt = tensor(x, {2, 8, 70}), wt = tensor(w, {12, 4, 3}),
                     bt = tensor(bias, {12});
        const std::vector<Tensor> outs{
            gelu(conv1d(xt, wt, &bt, 1, 1, 1, 2, MatmulClass::tensor_core)),
            conv1d(xt, wt, nullptr, 1, 1, 1, 2, MatmulClass::tensor_core)};
        const auto first = test::expect_class_in_every_member(outs, plan::LaunchKind::conv1d,
                                                              d->info().tensor_cores);
        if (first.empty()) continue;
        EXPECT_TRUE(within_bound({DType::bf16, first[1]}, {x, w}, s,
                                 {0, s.in_channels * s.length, s.length}, 0x1p-8));
    }
}

TEST(Conv1dTensorCore, F32InputsAreRefused) {
    Device& cpu = cpu_device();
    const Buffer x(cpu, DType::f32, 16), w(cpu, DType::f32, 4);
    test::expect_error_naming(
        "conv1d",
        [&] {
            ops::conv1d(cpu, {x, 1, 1, 16}, {w, 1, 1, 4}, {}, DType::f32, MatmulClass::tensor_core);
        },
        {"tensor-core class with f32 inputs", "expected f16 or bf16"});
    const Tensor xt = Tensor::zeros({1, 1, 16}, DType::f32, cpu);
    const Tensor wt = Tensor::zeros({1, 1, 4}, DType::f32, cpu);
    test::expect_error_naming(
        "conv1d", [&] { conv1d(xt, wt, nullptr, 1, 0, 1, 1, MatmulClass::tensor_core); },
        {"tensor-core class with f32 inputs"});
}

TEST(Conv1dTensorCore, EveryPointAndDtypeCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels;
    for (const auto& p : ops::conv1d_tensor_core_variants())
        kernels.push_back(ops::conv1d_kernel({DType::bf16, DType::f32}, p));
    for (DType input : {DType::f16, DType::bf16})
        for (DType out : {DType::f32, input})
            kernels.push_back(
                ops::conv1d_kernel({input, out}, ops::conv1d_variant("tc64x64_k32_w32x32")));
    expect_compiles_for_cuda(kernels);
}

}  // namespace
