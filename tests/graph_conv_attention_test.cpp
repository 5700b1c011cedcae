// conv1d and scaled_dot_product_attention as graph ops: against the graph oracle on every device,
// every schedule point of their launches and both forms (fused with the maps after them, split),
// their epilogues and prologues in the op's own launch, and bad shapes, parameters and dtypes as
// kiln::Errors.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>

#include "graph/node.hpp"
#include "ops/attention/attention.hpp"
#include "plan/graph_view.hpp"
#include "plan/partition.hpp"
#include "plan/resolve.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::expect_graph_everywhere;
using test::finite_tensor;
using test::launch_kinds;

TEST(GraphConv1d, StridedDilatedGroupedMatchesTheOracleAtEveryPointFusedAndSplit) {
    // Ragged length, padding on both ends, two groups; bias and relu after it.
    expect_graph_everywhere(
        [](Device& d) {
            Tensor x = finite_tensor(d, DType::f32, {2, 6, 37}, 1).resolve();
            Tensor w = finite_tensor(d, DType::f32, {8, 3, 5}, 2, 0.5f).resolve();
            Tensor bias = finite_tensor(d, DType::f32, {8}, 3).resolve();
            Tensor y = relu(conv1d(x, w, &bias, /*stride=*/2, /*padding=*/3, /*dilation=*/2,
                                   /*groups=*/2));
            EXPECT_EQ(y.shape(), (Shape{2, 8, 18}));  // (37 + 2*3 - 2*(5-1) - 1) / 2 + 1
            return std::vector<Tensor>{y};
        },
        /*sweep=*/true);
}

TEST(GraphConv1d, UnbatchedHalfInputsAndAViewOfXFollowTorchsShapes) {
    expect_graph_everywhere([](Device& d) {
        Tensor x = finite_tensor(d, DType::f16, {5, 40}, 4).resolve();
        Tensor w = finite_tensor(d, DType::f16, {7, 5, 3}, 5).resolve();
        // x given length-major: the planner copies the transpose before the conv reads it.
        Tensor xt = finite_tensor(d, DType::f32, {2, 33, 4}, 6).resolve();
        Tensor w2 = finite_tensor(d, DType::f32, {3, 4, 1}, 7).resolve();
        std::vector<Tensor> out{conv1d(x, w, nullptr, 1, 1), conv1d(xt.transpose(1, 2), w2) * 2.0};
        EXPECT_EQ(out[0].shape(), (Shape{7, 40}));
        EXPECT_EQ(out[0].dtype(), DType::f16);
        EXPECT_EQ(out[1].shape(), (Shape{2, 3, 33}));
        return out;
    });
}

TEST(GraphConv1d, BiasAndActivationRunInTheConvsLaunch) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = finite_tensor(*d, DType::f32, {3, 4, 29}, 8).resolve();
        Tensor w = finite_tensor(*d, DType::f32, {6, 4, 3}, 9).resolve();
        Tensor bias = finite_tensor(*d, DType::f32, {6}, 10).resolve();
        Tensor y = gelu(conv1d(x, w, &bias, 1, 1));
        test::expect_one_fused_launch(y, plan::LaunchKind::conv1d);
    }
}

TEST(GraphConvAttention, CastsAndScalingsOfTheOperandsRunInTheOpsLaunch) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = finite_tensor(*d, DType::f32, {2, 6, 37}, 40).resolve();
        Tensor w = finite_tensor(*d, DType::f32, {8, 6, 3}, 41).resolve();
        test::expect_one_fused_launch(
            conv1d((x * 0.5).to(DType::bf16), w.to(DType::bf16), nullptr, 1, 1),
            plan::LaunchKind::conv1d);
        Tensor q = finite_tensor(*d, DType::f32, {1, 2, 19, 16}, 42).resolve();
        Tensor k = finite_tensor(*d, DType::f32, {1, 2, 23, 16}, 43).resolve();
        Tensor v = finite_tensor(*d, DType::f32, {1, 2, 23, 16}, 44).resolve();
        test::expect_one_fused_launch(
            scaled_dot_product_attention(q.to(DType::f16), k.to(DType::f16), v.to(DType::f16),
                                         /*causal=*/true),
            plan::LaunchKind::attention);
    }
}

// q, k and v as a transformer makes them: a projection's rows plus a bias, seen as heads
// ([1, 19, 32] -> [1, 2, 19, 16]). Where views are read in place the bias and the head view are
// the attention's prologue (one launch); on the CPU the views' index arithmetic would run for
// every element each query block reads, so the operands are materialized first. Same bits.
TEST(GraphAttention, HeadViewsOfItsOperandsAreProloguesExceptOnTheCpu) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor bias = finite_tensor(*d, DType::f32, {32}, 45).resolve();
        auto heads = [&](uint64_t seed) {
            Tensor rows = finite_tensor(*d, DType::f32, {1, 19, 32}, seed).resolve();
            return (rows + bias).reshape({1, 19, 2, 16}).permute({0, 2, 1, 3});
        };
        Tensor o = scaled_dot_product_attention(heads(46), heads(47), heads(48));
        const plan::GraphView g = plan::view_graph({o.node()});
        const plan::Plan fused =
            plan::partition(g, plan::fold_groups(g), {plan::GroupForm::fused}).plan;
        const bool cpu = d->info().backend == Backend::cpu;
        EXPECT_EQ(fused.launches.size(), cpu ? 2u : 1u);
        EXPECT_EQ(fused.launches.back().kind, plan::LaunchKind::attention);
        const auto want = graph::evaluate({o.node()});
        o.resolve();
        EXPECT_EQ(o.to_host_bytes(), want[0].bytes());
    }
}

TEST(GraphAttention, CausalGroupedQueryMatchesTheOracleAtEveryPointFusedAndSplit) {
    // seq_k past one key block and not a multiple of it; seq_q < seq_k (bottom-right causal);
    // 4 query heads over 2 kv heads; a residual epilogue.
    expect_graph_everywhere(
        [](Device& d) {
            Tensor q = finite_tensor(d, DType::f32, {2, 4, 37, 24}, 11).resolve();
            Tensor k = finite_tensor(d, DType::f32, {2, 2, 70, 24}, 12).resolve();
            Tensor v = finite_tensor(d, DType::f32, {2, 2, 70, 24}, 13).resolve();
            Tensor o = scaled_dot_product_attention(q, k, v, /*causal=*/true);
            EXPECT_EQ(o.shape(), (Shape{2, 4, 37, 24}));
            return std::vector<Tensor>{o * 0.5 + q};
        },
        /*sweep=*/true);
}

TEST(GraphAttention, EveryPointOfTheOpsEntryGivesTheGraphOpsBits) {
    // The graph's launch bakes the sizes into its kernel; ops::attention's takes them as
    // parameters: both give the graph oracle's bits at every point.
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor q = finite_tensor(*d, DType::f32, {2, 4, 37, 24}, 11).resolve();
        Tensor k = finite_tensor(*d, DType::f32, {2, 2, 70, 24}, 12).resolve();
        Tensor v = finite_tensor(*d, DType::f32, {2, 2, 70, 24}, 13).resolve();
        const auto want = graph::evaluate({scaled_dot_product_attention(q, k, v, true).node()});
        const ops::AttentionShape shape{2, 4, 2, 37, 70, 24};
        for (const auto& point : ops::attention_variants()) {
            SCOPED_TRACE(point.name);
            const Buffer o =
                ops::attention_bench(*d, *q.node()->buffer, *k.node()->buffer, *v.node()->buffer,
                                     shape, {.causal = true}, point, 1)
                    .output;
            const std::vector<float> got = o.download<float>();
            std::vector<uint8_t> bytes(got.size() * sizeof(float));
            std::memcpy(bytes.data(), got.data(), bytes.size());
            EXPECT_EQ(bytes, want[0].bytes());
        }
    }
}

TEST(GraphAttention, KeyLengthsMaskAPaddedBatchAtEveryPoint) {
    // Three sequences padded to 70 keys: lengths 70, 1 and 65 (past one key block), plain and
    // causal; each batch's rows equal attention over its own keys alone.
    expect_graph_everywhere(
        [](Device& d) {
            Tensor q = finite_tensor(d, DType::f32, {3, 2, 70, 8}, 21).resolve();
            Tensor k = finite_tensor(d, DType::f32, {3, 2, 70, 8}, 22).resolve();
            Tensor v = finite_tensor(d, DType::f32, {3, 2, 70, 8}, 23).resolve();
            Tensor lengths = Tensor::from_host(std::vector<int32_t>{70, 1, 65}, {3}, d);
            return std::vector<Tensor>{scaled_dot_product_attention(q, k, v, false, {}, &lengths),
                                       scaled_dot_product_attention(q, k, v, true, {}, &lengths)};
        },
        /*sweep=*/true);
    // Batch 2 (length 65) alone, sliced to its keys, gives the same bits.
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor q = finite_tensor(*d, DType::f32, {3, 2, 70, 8}, 21).resolve();
        Tensor k = finite_tensor(*d, DType::f32, {3, 2, 70, 8}, 22).resolve();
        Tensor lengths = Tensor::from_host(std::vector<int32_t>{70, 1, 65}, {3}, *d);
        Tensor padded = scaled_dot_product_attention(q, k, k, false, {}, &lengths);
        Tensor k2 = k.slice(0, 2, 3).slice(2, 0, 65);
        Tensor alone = scaled_dot_product_attention(q.slice(0, 2, 3), k2, k2);
        EXPECT_EQ(padded.slice(0, 2, 3).to_host_bytes(), alone.to_host_bytes());
    }
}

TEST(GraphAttention, AKeyLengthOutOfRangeIsAnErrorWhenResolved) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor q = Tensor::zeros({2, 1, 4, 8}, DType::f32, *d);
        for (int32_t bad : {0, 5, -3}) {
            Tensor lengths = Tensor::from_host(std::vector<int32_t>{4, bad}, {2}, *d);
            Tensor o = scaled_dot_product_attention(q, q, q, false, {}, &lengths);
            test::expect_error_naming(
                "scaled_dot_product_attention", [&] { o.resolve(); },
                {fmt::format("key length {} of batch 1", bad), "expected 1 to seq_k = 4"});
        }
    }
}

TEST(GraphAttention, PlainBf16WithoutBatchAndAGivenScaleMatchTheOracle) {
    expect_graph_everywhere([](Device& d) {
        Tensor q = finite_tensor(d, DType::bf16, {3, 9, 16}, 14).resolve();
        Tensor k = finite_tensor(d, DType::bf16, {3, 130, 16}, 15).resolve();
        Tensor v = finite_tensor(d, DType::bf16, {3, 130, 16}, 16).resolve();
        // q read through a view: the planner materializes it first.
        Tensor qs = finite_tensor(d, DType::f32, {1, 2, 16, 5}, 17).resolve();
        Tensor ks = finite_tensor(d, DType::f32, {1, 2, 1, 5}, 18).resolve();
        std::vector<Tensor> out{scaled_dot_product_attention(q, k, v, false, 0.3),
                                scaled_dot_product_attention(qs * 2.0, ks, ks)};
        EXPECT_EQ(out[0].shape(), (Shape{3, 9, 16}));
        EXPECT_EQ(out[0].dtype(), DType::bf16);
        return out;
    });
}

TEST(GraphAttention, IsOneLaunchWithItsEpilogue) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor q = finite_tensor(*d, DType::f32, {1, 2, 8, 16}, 19).resolve();
        Tensor k = finite_tensor(*d, DType::f32, {1, 2, 8, 16}, 20).resolve();
        Tensor o = scaled_dot_product_attention(q, k, k) + 1.0;
        const auto want = graph::evaluate({o.node()});
        o.resolve();
        EXPECT_EQ(o.to_host_bytes(), want[0].bytes());
        const auto kinds = launch_kinds();
        ASSERT_FALSE(kinds.empty());
        EXPECT_EQ(kinds[0], plan::LaunchKind::attention);
    }
}

TEST(GraphConvAttention, BadOperandsAreErrorsNamingTheShapes) {
    using test::expect_error_naming;
    Device& d = cpu_device();
    auto zeros = [&](const Shape& s, DType t = DType::f32) { return Tensor::zeros(s, t, d); };
    Tensor x = zeros({2, 4, 10});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(x, zeros({3, 3, 3}));
                        },
                        {"3 input channels per group", "4 channels", "[out_channels, 4, kernel]"});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(x, zeros({3, 4, 11}));
                        },
                        {"kernel 11", "expected a kernel that fits the padded input"});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(x, zeros({3, 2, 3}), nullptr, 1, 0, 1, 2);
                        },
                        {"groups of 2", "expected groups to divide both"});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(x, zeros({4, 4, 3}), nullptr, 0);
                        },
                        {"stride 0", "expected >= 1"});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(zeros({10}), zeros({4, 1, 3}));
                        },
                        {"x is [10]", "[batch, in_channels, length]"});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(x, zeros({4, 4, 3}, DType::f16));
                        },
                        {"expected one dtype"});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(zeros({2, 4, 10}, DType::i32), zeros({4, 4, 3}, DType::i32));
                        },
                        {"i32", "expected f32, f16 or bf16"});
    Tensor bad_bias = zeros({5});
    expect_error_naming("conv1d",
                        [&] {
                            conv1d(x, zeros({4, 4, 3}), &bad_bias);
                        },
                        {"bias is f32 [5]", "[4]"});

    Tensor q = zeros({1, 6, 8, 16});
    expect_error_naming(
        "attention",
        [&] {
            scaled_dot_product_attention(q, zeros({1, 4, 8, 16}), zeros({1, 4, 8, 16}));
        },
        {"heads 6 is not a multiple of kv_heads 4"});
    expect_error_naming(
        "attention",
        [&] {
            scaled_dot_product_attention(q, zeros({1, 6, 5, 16}), zeros({1, 6, 5, 16}), true);
        },
        {"seq_q 8 > seq_k 5", "expected seq_q <= seq_k"});
    expect_error_naming(
        "attention",
        [&] {
            scaled_dot_product_attention(q, zeros({1, 6, 8, 16}), zeros({1, 6, 9, 16}));
        },
        {"[1, 6, 9, 16]", "k and v of one shape"});
    expect_error_naming("attention",
                        [&] {
                            Tensor big = zeros({1, 1, 2, 300});
                            scaled_dot_product_attention(big, big, big);
                        },
                        {"head_dim 300", "at most 256"});
    expect_error_naming("attention",
                        [&] {
                            scaled_dot_product_attention(q, zeros({1, 6, 8, 16}, DType::bf16),
                                                         zeros({1, 6, 8, 16}, DType::bf16));
                        },
                        {"k is bf16", "expected one dtype"});
    expect_error_naming("attention",
                        [&] {
                            scaled_dot_product_attention(zeros({8, 16}), q, q);
                        },
                        {"[8, 16]", "expected q [batch, heads, seq_q, head_dim]"});
    Tensor wrong = zeros({2}, DType::i32);
    expect_error_naming("attention",
                        [&] { scaled_dot_product_attention(q, q, q, false, {}, &wrong); },
                        {"key_lengths is i32 [2]", "expected i32 [1]"});
}

}  // namespace
}  // namespace kiln
