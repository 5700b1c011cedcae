// attention's tensor-core class: every point of the class's domain, interpreted on the host (the
// interpreter runs the mma step) and on a CUDA device with tensor cores, lies within the stated
// bound of the exact oracle on ragged shapes (seq not a multiple of the key block, head_dim not
// of 16, causal, grouped heads), and the points agree bit for bit; a half output is the f32
// output rounded; elsewhere the entry runs the exact class (the oracle's bits); f32 inputs are
// refused; the CUDA C compiles for sm_90 without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "kiln/interpret.hpp"
#include "kiln/semantics.hpp"
#include "kiln/tensor.hpp"
#include "ops/attention/attention.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/attention.hpp"
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

struct Case {
    ops::AttentionShape shape;
    bool causal;
};

// One key (seq 1); a causal grouped-query shape with seq_q < seq_k, neither a multiple of the
// key block; head_dim 40 (not a multiple of 16: padded dims) over two key blocks and a bit;
// head_dim 20 (not a multiple of 8: V read element by element); causal with key blocks every row
// of a query block sees whole (no mask) and others it sees in part.
const Case kCases[] = {
    {{1, 1, 0, 1, 1, 16}, false}, {{1, 4, 2, 37, 70, 64}, true},  {{2, 2, 0, 20, 130, 40}, false},
    {{1, 1, 0, 9, 9, 20}, true},  {{1, 1, 0, 80, 150, 32}, true},
};

struct Inputs {
    HostBuffer q, k, v;
};

Inputs inputs(DType input, const ops::AttentionShape& s, uint64_t seed) {
    const int64_t kv = s.kv_heads == 0 ? s.heads : s.kv_heads;
    const size_t nq = size_t(s.batch * s.heads * s.seq_q * s.head_dim);
    const size_t nk = size_t(s.batch * kv * s.seq_k * s.head_dim);
    return {random_values(input, nq, seed), random_values(input, nk, seed + 1),
            random_values(input, nk, seed + 2)};
}

// Every output within the class's bound of the exact oracle, plus `rounding` times the oracle's
// magnitude (a half output's rounding: 2^-8 for bf16).
::testing::AssertionResult within_bound(const HostBuffer& got, const Inputs& in, const Case& c,
                                        double rounding = 0) {
    const float scale = ops::attention_scale(c.shape, {});
    const HostBuffer exact{
        DType::f32, oracle::attention(in.q.dtype, DType::f32, in.q.bytes, in.k.bytes, in.v.bytes,
                                      c.shape, c.causal, scale)};
    const std::vector<double> bound = oracle::attention_tensor_core_bound(
        in.q.dtype, in.q.bytes, in.k.bytes, in.v.bytes, c.shape, c.causal, scale);
    for (size_t i = 0; i < bound.size(); ++i) {
        const double diff = std::fabs(double(float_at(got, i)) - double(float_at(exact, i)));
        if (!(diff <= bound[i] + rounding * std::fabs(double(float_at(exact, i)))))
            return ::testing::AssertionFailure()
                   << "o[" << i << "] = " << float_at(got, i) << ", oracle " << float_at(exact, i)
                   << ": off by " << diff << ", bound " << bound[i];
    }
    return ::testing::AssertionSuccess();
}

ops::AttentionOptions options(bool causal, DType out = DType::f32) {
    ops::AttentionOptions o;
    o.causal = causal;
    o.out = out;
    o.arithmetic = MatmulClass::tensor_core;
    return o;
}

// The interpreter runs the mma step (each product added in k order): every point's fragment
// layout, masks and softmax are checked on the host, and the points agree bit for bit.
TEST(AttentionTensorCore, InterpretedPointsAgreeAndStayWithinTheBound) {
    uint64_t seed = 1;
    for (const Case& c : kCases) {
        const Inputs in = inputs(DType::bf16, c.shape, seed += 3);
        HostBuffer first;
        for (const auto& p : ops::attention_tensor_core_variants()) {
            SCOPED_TRACE(fmt::format("{} seq_q={} seq_k={} d={}", p.name, c.shape.seq_q,
                                     c.shape.seq_k, c.shape.head_dim));
            const ops::AttentionTypes t{DType::bf16, DType::f32, int(c.shape.head_dim)};
            const size_t n = in.q.count();
            const auto out = interpret(ops::attention_kernel(t, p), ops::attention_grid(c.shape, p),
                                       {in.q, in.k, in.v, test::poisoned(DType::f32, n)},
                                       ops::attention_scalars(c.shape, options(c.causal)));
            if (first.bytes.empty()) {
                first = out[3];
                EXPECT_TRUE(within_bound(out[3], in, c));
            } else {
                EXPECT_TRUE(identical(out[3], first));
            }
        }
    }
}

// On each device with tensor cores: every point of the class, both half dtypes; the points agree
// bit for bit and lie within the bound; a half output is the f32 output rounded once.
TEST(AttentionTensorCore, PointsAgreeAndStayWithinTheBoundOnTensorCores) {
    uint64_t seed = 100;
    for (Device* d : devices()) {
        if (!d->info().tensor_cores) continue;
        for (DType input : {DType::bf16, DType::f16})
            for (const Case& c : kCases) {
                const Inputs in = inputs(input, c.shape, seed += 3);
                const Buffer q = upload(*d, in.q), k = upload(*d, in.k), v = upload(*d, in.v);
                HostBuffer first;
                for (const auto& p : ops::attention_tensor_core_variants()) {
                    SCOPED_TRACE(fmt::format("{} {} {} seq_q={} seq_k={} d={}", d->info().id,
                                             p.name, name(input), c.shape.seq_q, c.shape.seq_k,
                                             c.shape.head_dim));
                    const HostBuffer o = download(
                        ops::attention_bench(*d, q, k, v, c.shape, options(c.causal), p, 1).output);
                    if (!first.bytes.empty()) {
                        EXPECT_TRUE(identical(o, first));
                        continue;
                    }
                    first = o;
                    EXPECT_TRUE(within_bound(o, in, c));
                    const HostBuffer half = download(
                        ops::attention_bench(*d, q, k, v, c.shape, options(c.causal, input), p, 1)
                            .output);
                    std::vector<float> values(o.count());
                    for (size_t i = 0; i < values.size(); ++i) values[i] = float_at(o, i);
                    EXPECT_TRUE(identical(half, test::encode_floats(input, values)));
                }
            }
    }
}

// The entry with the class: on tensor cores within the bound, elsewhere the exact class's bits.
TEST(AttentionTensorCore, EntryRunsTheClassOnTensorCoresAndTheExactClassElsewhere) {
    const Case c{{1, 2, 0, 33, 33, 32}, true};
    const Inputs in = inputs(DType::bf16, c.shape, 7);
    const HostBuffer exact{
        DType::f32, oracle::attention(DType::bf16, DType::f32, in.q.bytes, in.k.bytes, in.v.bytes,
                                      c.shape, true, ops::attention_scale(c.shape, {}))};
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const Buffer q = upload(*d, in.q), k = upload(*d, in.k), v = upload(*d, in.v);
        const HostBuffer o = download(ops::attention(*d, q, k, v, c.shape, options(true)));
        if (d->info().tensor_cores)
            EXPECT_TRUE(within_bound(o, in, c));
        else
            EXPECT_TRUE(identical(o, exact));
        const auto domain = ops::attention_domain(*d, MatmulClass::tensor_core, 32);
        EXPECT_EQ(domain.front().tensor_core(), d->info().tensor_cores);
    }
}

// The graph's scaled_dot_product_attention with the class, q's cast fused where the kernel reads
// it (a prologue) or not, and a scaling after it (an epilogue). Off tensor cores the resolve gives
// the exact oracle's bits. On them every plan member gives the same bits, the launch runs a
// tensor-core point and the output (bf16) lies within the bound plus its rounding.
TEST(AttentionTensorCore, GraphAttentionRunsTheClassInEveryMember) {
    const Case c{{2, 4, 2, 45, 70, 32}, true};
    const Inputs in = inputs(DType::bf16, c.shape, 31);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto tensor = [&](const HostBuffer& h, int64_t heads, int64_t seq) {
            return Tensor::from_bytes(h.bytes.data(), h.count(), DType::bf16,
                                      {c.shape.batch, heads, seq, c.shape.head_dim}, *d);
        };
        // Q and V through exact round trips the planner fuses into the launch (operands that are
        // not buffers: V's k-major tile is then filled element by element), K a buffer (copied).
        const Tensor q = tensor(in.q, c.shape.heads, c.shape.seq_q).to(DType::f32).to(DType::bf16);
        const Tensor k = tensor(in.k, c.shape.kv_heads, c.shape.seq_k);
        const Tensor v =
            tensor(in.v, c.shape.kv_heads, c.shape.seq_k).to(DType::f32).to(DType::bf16);
        const Tensor o =
            scaled_dot_product_attention(q, k, v, true, {}, nullptr, MatmulClass::tensor_core);
        const auto first = test::expect_class_in_every_member(
            {o, o * 2.0}, plan::LaunchKind::attention, d->info().tensor_cores);
        if (first.empty()) continue;
        EXPECT_TRUE(within_bound({DType::bf16, first[0]}, in, c, 0x1p-8));
    }
}

// A head_dim whose pair tiles no tensor-core point fits runs the exact class's points.
TEST(AttentionTensorCore, HeadDimsPastTheTilesRunTheExactPoints) {
    // Every point's tiles fit head_dim 64; one stage's fit 128 and two stages' do not.
    for (const auto& p : ops::attention_tensor_core_variants()) {
        EXPECT_TRUE(ops::attention_fits(p, 64)) << p.name;
        EXPECT_EQ(ops::attention_fits(p, 128), p.stages == 1) << p.name;
        EXPECT_FALSE(ops::attention_fits(p, 256)) << p.name;
    }
    for (Device* d : devices())
        EXPECT_FALSE(
            ops::attention_domain(*d, MatmulClass::tensor_core, 256).front().tensor_core());
}

TEST(AttentionTensorCore, F32InputsAreRefused) {
    Device& cpu = cpu_device();
    const ops::AttentionShape s{1, 1, 0, 4, 4, 8};
    const Buffer q(cpu, DType::f32, 32), k(cpu, DType::f32, 32), v(cpu, DType::f32, 32);
    test::expect_error_naming("attention", [&] { ops::attention(cpu, q, k, v, s, options(false)); },
                              {"tensor-core class with f32 inputs", "expected f16 or bf16"});
    test::expect_error_naming(
        "attention",
        [&] {
            ops::attention_kernel({DType::f32, DType::f32, 8}, ops::attention_variant("tc64_w4"));
        },
        {"tensor-core class with f32 inputs"});
}

// As CUDA C for sm_90 by NVRTC (no GPU needed): every point, both half dtypes and outputs, and
// head_dims 16 to 128 with and without padded dims.
TEST(AttentionTensorCore, EveryPointAndDtypeCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> kernels;
    for (const auto& p : ops::attention_tensor_core_variants())
        kernels.push_back(
            ops::attention_kernel({DType::bf16, DType::f32, p.stages == 1 ? 128 : 64}, p));
    for (DType input : {DType::f16, DType::bf16})
        for (DType out : {DType::f32, input})
            for (int d : {16, 40, 64})
                kernels.push_back(
                    ops::attention_kernel({input, out, d}, ops::attention_variant("tc64_w4")));
    expect_compiles_for_cuda(kernels);
}

}  // namespace
