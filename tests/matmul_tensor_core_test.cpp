// matmul's tensor-core class: on a CUDA device with tensor cores every point of the class's
// domain gives the same bits, within the stated bound of the exact oracle, on ragged shapes and
// every layout; its half outputs are its f32 outputs rounded once; elsewhere the class runs the
// exact class (the oracle's bits); f32 inputs are refused; targets without tensor cores refuse the
// mma step; the CUDA C compiles for sm_90 without a GPU; the graph's matmul and linear take the
// class, and every plan member honours it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "kiln/semantics.hpp"
#include "kiln/tensor.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/matmul.hpp"
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

using Points = std::vector<const ops::MatmulSchedule*>;

Points tensor_core_points() {
    Points points;
    for (const auto& s : ops::matmul_tensor_core_variants()) points.push_back(&s);
    return points;
}

// Ragged shapes (batch, m, n, k): k = 1 (one padded mma step), 16 (one whole), 70 (two whole
// steps of 32 and a short one of 6: a whole mma step and a padded one), 300; m and n not
// multiples of any warp or block tile.
constexpr ops::MatmulShape kShapes[] = {
    {1, 1, 1, 1}, {2, 37, 45, 16}, {1, 131, 133, 70}, {1, 200, 9, 300}, {3, 20, 19, 17},
};

size_t view_index(const ops::MatmulOperand& v, int64_t b, int64_t r, int64_t c, int64_t rows,
                  int64_t cols) {
    const int64_t ld = v.ld != 0 ? v.ld : (v.transposed ? rows : cols);
    return static_cast<size_t>(v.offset + b * v.batch_stride +
                               (v.transposed ? c * ld + r : r * ld + c));
}

// Every output of `got` within the class's bound of the exact oracle, plus `rounding` times the
// oracle's magnitude (a half output's rounding: 2^-8 for bf16).
::testing::AssertionResult within_bound(const HostBuffer& got, const HostBuffer& a,
                                        const ops::MatmulOperand& av, const HostBuffer& b,
                                        const ops::MatmulOperand& bv, const ops::MatmulShape& s,
                                        double rounding = 0) {
    const HostBuffer exact{DType::f32,
                           oracle::matmul(a.dtype, DType::f32, a.bytes, av, b.bytes, bv, s)};
    const std::vector<double> class_bound =
        oracle::matmul_tensor_core_bound(a.dtype, a.bytes, av, b.bytes, bv, s);
    for (int64_t bt = 0; bt < s.batch; ++bt)
        for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
                const size_t at = static_cast<size_t>((bt * s.m + i) * s.n + j);
                const double diff = std::fabs(static_cast<double>(float_at(got, at)) -
                                              static_cast<double>(float_at(exact, at)));
                const double bound = class_bound[at] +
                                     rounding * std::fabs(static_cast<double>(float_at(exact, at)));
                if (!(diff <= bound))
                    return ::testing::AssertionFailure()
                           << "c[" << bt << "," << i << "," << j << "] = " << float_at(got, at)
                           << ", oracle " << float_at(exact, at) << ": off by " << diff
                           << ", bound " << bound;
            }
    return ::testing::AssertionSuccess();
}

// Each shape and layout through every tensor-core point on each device with tensor cores: the
// points agree bit for bit and lie within the bound; a half output is the f32 output rounded.
// Views at odd offsets and strides, and (`aligned`) at offsets and strides of 16 bytes, where
// operands contiguous along k are read 8 elements a load.
void expect_points_on_tensor_cores(DType input, bool at, bool bt, uint64_t seed, bool aligned) {
    auto round8 = [](int64_t v) { return (v + 7) / 8 * 8; };
    for (Device* d : devices()) {
        if (!d->info().tensor_cores) continue;
        for (const auto& s : kShapes) {
            const int64_t lda = aligned ? round8(at ? s.m : s.k) : (at ? s.m : s.k) + 2;
            const int64_t ldb = aligned ? round8(bt ? s.k : s.n) : (bt ? s.k : s.n) + 1;
            const ops::MatmulOperand av{aligned ? 0 : 3, 0, lda, at};
            ops::MatmulOperand bv{aligned ? 0 : 1, 0, ldb, bt};
            ops::MatmulOperand avb = av;
            avb.batch_stride = (at ? s.k : s.m) * lda + (aligned ? 8 : 5);
            bv.batch_stride = (bt ? s.n : s.k) * ldb + (aligned ? 8 : 5);
            const size_t a_count = view_index(avb, s.batch - 1, s.m - 1, s.k - 1, s.m, s.k) + 1;
            const size_t b_count = view_index(bv, s.batch - 1, s.k - 1, s.n - 1, s.k, s.n) + 1;
            const HostBuffer a = random_values(input, a_count, seed++);
            const HostBuffer b = random_values(input, b_count, seed++);
            const Buffer ab = upload(*d, a), bb = upload(*d, b);
            HostBuffer first;
            for (const auto* p : tensor_core_points()) {
                SCOPED_TRACE(fmt::format("{} {} {} a{} b{} batch={} m={} n={} k={}", d->info().id,
                                         p->name, name(input), at ? "t" : "n", bt ? "t" : "n",
                                         s.batch, s.m, s.n, s.k));
                const HostBuffer c =
                    download(ops::matmul_bench(*d, ab, avb, bb, bv, s, DType::f32, *p, 1).output);
                if (first.bytes.empty()) {
                    first = c;
                    EXPECT_TRUE(within_bound(c, a, avb, b, bv, s));
                    // The same launch with a half output: the f32 result rounded once.
                    const HostBuffer half =
                        download(ops::matmul_bench(*d, ab, avb, bb, bv, s, input, *p, 1).output);
                    std::vector<float> values(c.bytes.size() / 4);
                    for (size_t i = 0; i < values.size(); ++i) values[i] = float_at(c, i);
                    EXPECT_TRUE(identical(half, test::encode_floats(input, values)));
                } else {
                    EXPECT_TRUE(identical(c, first));
                }
            }
        }
    }
}

TEST(MatmulTensorCore, Bf16PointsAgreeAndStayWithinTheBoundOnTensorCores) {
    expect_points_on_tensor_cores(DType::bf16, false, false, 1, false);
    expect_points_on_tensor_cores(DType::bf16, true, true, 100, false);
    expect_points_on_tensor_cores(DType::bf16, false, true, 150, true);
    expect_points_on_tensor_cores(DType::bf16, true, true, 170, true);
}

TEST(MatmulTensorCore, F16PointsAgreeAndStayWithinTheBoundOnTensorCores) {
    expect_points_on_tensor_cores(DType::f16, false, true, 200, false);
    expect_points_on_tensor_cores(DType::f16, true, false, 300, false);
    expect_points_on_tensor_cores(DType::f16, false, true, 350, true);
}

// The interpreter runs the mma step (each product added in k order, within the class's bound of
// the hardware), so every point's fragment layout and staging is checked on the host too: ragged
// shapes, both layouts of each operand, views at odd and at 16-byte-aligned offsets.
TEST(MatmulTensorCore, InterpretedPointsStayWithinTheBound) {
    constexpr ops::MatmulShape shapes[] = {
        {1, 1, 1, 1}, {2, 37, 45, 16}, {1, 40, 33, 70}, {1, 20, 24, 300}};
    uint64_t seed = 400;
    for (const auto* p : tensor_core_points())
        for (const auto& s : shapes)
            for (int layout = 0; layout < 4; ++layout) {
                const bool at = layout & 1, bt = layout & 2, aligned = layout == 2;
                SCOPED_TRACE(fmt::format("{} a{} b{} m={} n={} k={}", p->name, at ? "t" : "n",
                                         bt ? "t" : "n", s.m, s.n, s.k));
                const int64_t lda = (at ? s.m : s.k) + (aligned ? 0 : 3);
                const int64_t ldb = aligned ? (s.k + 7) / 8 * 8 : (bt ? s.k : s.n) + 1;
                const ops::MatmulOperand av{aligned ? 0 : 1, (at ? s.k : s.m) * lda, lda, at};
                const ops::MatmulOperand bv{aligned ? 8 : 2, (bt ? s.n : s.k) * ldb, ldb, bt};
                const HostBuffer a = random_values(
                    DType::bf16, view_index(av, s.batch - 1, s.m - 1, s.k - 1, s.m, s.k) + 1,
                    seed++);
                const HostBuffer b = random_values(
                    DType::bf16, view_index(bv, s.batch - 1, s.k - 1, s.n - 1, s.k, s.n) + 1,
                    seed++);
                const ops::MatmulOperand c{0, s.m * s.n, s.n, false};
                const auto out =
                    interpret(ops::matmul_kernel({DType::bf16, DType::f32, at, bt}, *p),
                              ops::matmul_grid(s, *p),
                              {a, b, test::poisoned(DType::f32, size_t(s.batch * s.m * s.n))},
                              ops::matmul_scalars(s, av, bv, c));
                EXPECT_TRUE(within_bound(out[2], a, av, b, bv, s));
            }
}

// The entry with the class: on tensor cores within the bound (and tuned over the class's
// points), elsewhere the exact class's bits.
// The entry, with a winner recorded beforehand in a private tuner: a point of the class's domain
// on tensor cores, an exact point elsewhere. The call must hit it (a winner outside the domain the
// entry chose would be raced again) and give the class's numbers.
TEST(MatmulTensorCore, EntryRunsTheClassOnTensorCoresAndTheExactClassElsewhere) {
    const ops::MatmulShape s{2, 70, 45, 100};
    const HostBuffer a = random_values(DType::bf16, static_cast<size_t>(s.batch * s.m * s.k), 5);
    const HostBuffer b = random_values(DType::bf16, static_cast<size_t>(s.k * s.n), 6);
    const ops::MatmulOperand av{0, s.m * s.k, 0, false}, bv{};
    const HostBuffer exact{DType::f32,
                           oracle::matmul(DType::bf16, DType::f32, a.bytes, av, b.bytes, bv, s)};
    const auto root =
        std::filesystem::temp_directory_path() /
        fmt::format("kiln_matmul_class_tune_{}", ::testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const bool tensor_cores = d->info().tensor_cores;
        const Buffer ab = upload(*d, a), bb = upload(*d, b);
        Tuner tuner(root);
        const std::string key =
            ops::matmul_tuned(*d, ab, av, bb, bv, s, DType::f32, ops::MatmulClass::tensor_core)
                .full_key();
        tuner.record(d->info().id, "matmul", key,
                     tensor_cores ? "tc32x32_k32_w16x16" : "s16x16_k16_t1x1");
        const HostBuffer c =
            download(ops::matmul(*d, {ab, 2, s.m, s.k}, {bb, 1, s.k, s.n}, DType::f32,
                                 ops::MatmulClass::tensor_core, tuner));
        EXPECT_EQ(tuner.counters().hits, 1u);
        EXPECT_EQ(tuner.counters().benched, 0u);
        if (tensor_cores)
            EXPECT_TRUE(within_bound(c, a, av, b, bv, s));
        else
            EXPECT_TRUE(identical(c, exact));
    }
    std::filesystem::remove_all(root);
}

TEST(MatmulTensorCore, F32InputsAreRefused) {
    Device& cpu = cpu_device();
    const Buffer a(cpu, DType::f32, 6), b(cpu, DType::f32, 6);
    test::expect_error_naming(
        "matmul",
        [&] {
            ops::matmul(cpu, {a, 1, 2, 3}, {b, 1, 3, 2}, DType::f32, ops::MatmulClass::tensor_core);
        },
        {"tensor-core class with f32 inputs", "expected f16 or bf16"});
    test::expect_error_naming("matmul",
                              [&] {
                                  ops::matmul_bench(cpu, a, {}, b, {}, {1, 2, 2, 3}, DType::f32,
                                                    ops::matmul_variant("tc64x64_k32_w32x32"), 1);
                              },
                              {"tensor-core class with f32 inputs"});
}

// The graph: linear with the class, bias and gelu after it, and a bare matmul with it. Off tensor
// cores the resolve gives the exact oracle's bits (the exact class's members are swept by
// graph_contract_test). On them every plan member (each fold group fused and split, every point
// of every launch) gives the same bits, the epilogue's too, the launch runs a tensor-core point
// and the bare matmul (bf16 out) lies within the bound plus the bf16 rounding.
TEST(MatmulTensorCore, GraphMatmulAndLinearRunTheClassInEveryMember) {
    const int64_t batch = 2, m = 37, k = 70, n = 45;
    const HostBuffer x = random_values(DType::bf16, static_cast<size_t>(batch * m * k), 21);
    const HostBuffer w = random_values(DType::bf16, static_cast<size_t>(n * k), 22);
    const HostBuffer bias = random_values(DType::bf16, static_cast<size_t>(n), 23);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto tensor = [&](const HostBuffer& h, const Shape& shape) {
            return Tensor::from_bytes(h.bytes.data(), h.bytes.size() / 2, DType::bf16, shape, *d);
        };
        const Tensor xt = tensor(x, {batch, m, k}), wt = tensor(w, {n, k}), bt = tensor(bias, {n});
        const std::vector<Tensor> outs{gelu(linear(xt, wt, &bt, MatmulClass::tensor_core)),
                                       matmul(xt, wt.transpose(0, 1), MatmulClass::tensor_core)};
        const auto first = test::expect_class_in_every_member(outs, plan::LaunchKind::contract,
                                                              d->info().tensor_cores);
        if (first.empty()) continue;
        const HostBuffer got{DType::bf16, first[1]};
        EXPECT_TRUE(within_bound(got, x, {0, m * k, 0, false}, w, {0, 0, 0, true}, {batch, m, n, k},
                                 0x1p-8));
    }
}

// The CPU and OpenCL dialects have no tensor cores: a kernel with an mma step is refused when its
// source is generated, naming the backend.
TEST(MatmulTensorCore, TargetsWithoutTensorCoresRefuseTheMmaStep) {
    const std::vector kernels{ops::matmul_kernel({DType::bf16, DType::f32, false, false},
                                                 ops::matmul_variant("tc32x32_k32_w16x16"))};
    for (Backend backend : {Backend::cpu, Backend::opencl})
        test::expect_error_naming("matmul", [&] { (void)generate_source(backend, kernels); },
                                  {"mma step", "no tensor cores", "expected a CUDA device"});
}

// As CUDA C for sm_90 by NVRTC (no GPU needed): every point, both half dtypes (f32 and own
// output) and every layout on one point.
TEST(MatmulTensorCore, EveryPointDtypeAndLayoutCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels;
    for (const auto& s : ops::matmul_tensor_core_variants())
        kernels.push_back(ops::matmul_kernel({DType::bf16, DType::f32, false, false}, s));
    for (DType input : {DType::f16, DType::bf16})
        for (DType out : {DType::f32, input})
            for (bool at : {false, true})
                for (bool bt : {false, true})
                    kernels.push_back(ops::matmul_kernel(
                        {input, out, at, bt}, ops::matmul_variant("tc64x64_k32_w32x32")));
    expect_compiles_for_cuda(kernels);
}

}  // namespace
