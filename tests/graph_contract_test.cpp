// Contractions in the graph: matmul and linear against the graph oracle on every device, every
// schedule point and both forms (fused with its epilogue, split), operands read in place through
// transposes and broadcast batches, prologues (casts, dequantization) and epilogues fused into the
// contraction's launch, and bad shapes and dtypes as kiln::Errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <algorithm>

#include "ops/matmul/matmul.hpp"
#include "plan/choose.hpp"
#include "plan/graph_view.hpp"
#include "plan/partition.hpp"
#include "plan/resolve.hpp"
#include "plan/sweep.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

// The plans these tests check are the ones a 2-core machine's facts give (support/graph_check.hpp).
[[maybe_unused]] const int kGivenFacts = test::give_cpu_facts();

using test::expect_graph_everywhere;
using test::finite_tensor;
using test::launch_kinds;

TEST(GraphContract, RaggedMatmulMatchesTheOracleAtEveryPointFusedAndSplit) {
    // m, n, k prime: no tile of any point divides them; the epilogue is fused or not.
    expect_graph_everywhere(
        [](Device& d) {
            Tensor a = finite_tensor(d, DType::f32, {37, 19}, 1).resolve();
            Tensor b = finite_tensor(d, DType::f32, {19, 29}, 2).resolve();
            Tensor bias = finite_tensor(d, DType::f32, {29}, 3).resolve();
            return std::vector<Tensor>{relu(matmul(a, b) + bias)};
        },
        /*sweep=*/true);
}

// k of 600 terms is three chunks (256, 256, 88; kiln/ops/contraction_order.hpp): in the segments
// form a contract_chunks launch writes each chunk's sums and a chunk_sum launch adds them in
// order and stores the epilogue. Every point of both launches, and every other form, gives the
// oracle's bits (b is read through its transpose).
TEST(GraphContract, ALongKSplitIntoItsChunksAcrossBlocksMatchesTheOracleAtEveryPoint) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor a = finite_tensor(*d, DType::f32, {5, 600}, 21).resolve();
        Tensor bt = finite_tensor(*d, DType::f32, {37, 600}, 22, 0.5f).resolve();
        Tensor bias = finite_tensor(*d, DType::f32, {37}, 23).resolve();
        Tensor y = relu(matmul(a, bt.transpose(0, 1)) + bias);
        const auto want = graph::evaluate({y.node()});
        // The segments form's launches, and how many members vary them.
        const plan::GraphView g = plan::view_graph({y.node()});
        std::vector<plan::GroupForm> forms(plan::fold_groups(g).size(), plan::GroupForm::fused);
        const plan::GroupForm chunked = plan::GroupForm::segments;
        forms.back() = chunked;
        const plan::Plan p = plan::partition_or_split(g, plan::fold_groups(g), forms);
        ASSERT_EQ(forms.back(), chunked);
        std::vector<plan::LaunchKind> kinds;
        size_t chunk_members = 1;
        for (const auto& l : p.launches) {
            kinds.push_back(l.kind);
            chunk_members += l.domain.size() - 1;
        }
        ASSERT_GE(kinds.size(), 2u);
        EXPECT_EQ(std::vector(kinds.end() - 2, kinds.end()),
                  (std::vector{plan::LaunchKind::contract_chunks, plan::LaunchKind::chunk_sum}));
        size_t ran = 0;
        plan::sweep({y.node()}, [&](const plan::Member& m, const auto& got) {
            SCOPED_TRACE(m.fusion + " " + m.launch + " " + m.schedule);
            EXPECT_EQ(got.at(0), want[0].bytes());
            if (m.fusion.find(plan::name(chunked)) != std::string::npos) ++ran;
        });
        EXPECT_EQ(ran, chunk_members);
    }
}

// A product with few outputs and a long k (a few tokens through a linear layer) has too few
// tiles for a GPU's units: the cost model gives it the segments form, ceil(k/256) times the
// blocks, where the chunk sums' second launch costs less than the idle units; a product with one
// chunk of k has no such form, and two cores are busy without it.
TEST(GraphContract, TheCostModelSplitsALongKWhereAGpuWouldIdle) {
    Device& cpu = cpu_device();
    auto kinds = [&](int64_t m, int64_t k, const plan::DeviceFacts& facts) {
        Tensor x = finite_tensor(cpu, DType::f32, {m, k}, 24).resolve();
        Tensor w = finite_tensor(cpu, DType::f32, {k, 1024}, 25).resolve();
        Tensor y = gelu(matmul(x, w));
        std::vector<plan::LaunchKind> out;
        for (const auto& l : plan::choose_plan(plan::view_graph({y.node()}), facts, true).launches)
            out.push_back(l.kind);
        return out;
    };
    const std::vector chunked{plan::LaunchKind::contract_chunks, plan::LaunchKind::chunk_sum};
    EXPECT_EQ(kinds(32, 4096, test::kH200LikeFacts), chunked);
    EXPECT_EQ(kinds(1, 2048, test::kH200LikeFacts), chunked);
    EXPECT_EQ(kinds(32, 256, test::kH200LikeFacts), std::vector{plan::LaunchKind::contract});
    EXPECT_EQ(kinds(32, 4096, test::kTwoCoreFacts), std::vector{plan::LaunchKind::contract});
}

// On the CPU a transposed operand is copied dense first (a map launch): its matmul points would
// gather it one element a lane (plan/contract.cpp).
TEST(GraphContract, TransposedAndBroadcastOperandsAreReadInPlace) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const auto transposed = d->info().backend == Backend::cpu
                                    ? std::vector{plan::LaunchKind::map, plan::LaunchKind::contract}
                                    : std::vector{plan::LaunchKind::contract};
        // a: 3 batches of 13 x 9 given as their transposes; b: one 9 x 11 matrix for every batch.
        Tensor at = finite_tensor(*d, DType::f32, {3, 9, 13}, 4).resolve();
        Tensor b = finite_tensor(*d, DType::f32, {9, 11}, 5).resolve();
        Tensor c = matmul(at.transpose(-1, -2), b);
        ASSERT_EQ(c.shape(), (Shape{3, 13, 11}));
        const auto want = graph::evaluate({c.node()});
        c.resolve();
        EXPECT_EQ(launch_kinds(), transposed);
        EXPECT_EQ(c.to_host_bytes(), want[0].bytes());
        // b transposed and shared, a batched: still one launch.
        Tensor bt = finite_tensor(*d, DType::f32, {1, 11, 9}, 6).resolve();
        Tensor a = finite_tensor(*d, DType::f32, {2, 3, 13, 9}, 7).resolve();
        Tensor e = matmul(a, bt.transpose(1, 2));
        ASSERT_EQ(e.shape(), (Shape{2, 3, 13, 11}));
        const auto want_e = graph::evaluate({e.node()});
        e.resolve();
        EXPECT_EQ(launch_kinds(), transposed);
        EXPECT_EQ(e.to_host_bytes(), want_e[0].bytes());
    }
}

// The shape of what the copy before a matmul writes: b's matrices, or the longer rows the CPU
// gives a b whose rows are a multiple of 1 KiB apart (plan/contract.cpp).
Shape copied_before(const Tensor& c) {
    const plan::GraphView g = plan::view_graph({c.node()});
    const plan::Plan p = plan::choose_plan(g, test::kTwoCoreFacts, true);
    if (p.launches.size() != 2 || p.launches[0].outputs.size() != 1) return {};
    return g.node(p.launches[0].outputs[0]).shape;
}

// Whether a resolve's launches are the product's own, no copy before it: one contraction, or a
// split of k (its chunks' launch and their sum's), as a device's facts may choose.
bool product_alone(const std::vector<plan::LaunchKind>& kinds) {
    return !kinds.empty() && std::none_of(kinds.begin(), kinds.end(), [](plan::LaunchKind k) {
        return k == plan::LaunchKind::map;
    });
}

// On the CPU a b whose rows are 1 KiB apart or a multiple of that (the kernel's walk down k would
// reuse a few cache sets) is read as the leading columns of a copy with rows 64 bytes longer: a
// linear's weight (x with batch axes or not), which is copied anyway to undo its transpose, and a
// dense b when a has enough rows and the sum enough terms to pay for the copy. The bits are the
// oracle's; other devices and other shapes read b as it is.
TEST(GraphContract, OnTheCpuABWithRowsAMultipleOf1KiBApartIsReadFromAPaddedCopy) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const bool cpu = d->info().backend == Backend::cpu;
        const Tensor x = finite_tensor(*d, DType::f32, {7, 40}, 1).resolve();
        const Tensor w = finite_tensor(*d, DType::f32, {256, 40}, 2).resolve();
        const Tensor bias = finite_tensor(*d, DType::f32, {256}, 3).resolve();
        Tensor y = linear(x, w, &bias);
        if (cpu) {
            EXPECT_EQ(copied_before(y), (Shape{40, 256 + 16}));
        }
        auto want = graph::evaluate({y.node()});
        y.resolve();
        EXPECT_EQ(y.to_host_bytes(), want[0].bytes());

        // x with batch axes: the weight's copy is every batch's matrix, padded the same.
        const Tensor xs = finite_tensor(*d, DType::f32, {3, 5, 40}, 9).resolve();
        Tensor ys = linear(xs, w, &bias);
        if (cpu) {
            EXPECT_EQ(copied_before(ys), (Shape{40, 256 + 16}));
        }
        want = graph::evaluate({ys.node()});
        ys.resolve();
        EXPECT_EQ(ys.to_host_bytes(), want[0].bytes());

        const Tensor a = finite_tensor(*d, DType::f32, {256, 1024}, 4).resolve();
        const Tensor b = finite_tensor(*d, DType::f32, {1024, 256}, 5).resolve();
        Tensor c = matmul(a, b);
        if (cpu) {
            EXPECT_EQ(copied_before(c), (Shape{1024, 256 + 16}));
        }
        want = graph::evaluate({c.node()});
        c.resolve();
        EXPECT_EQ(c.to_host_bytes(), want[0].bytes());
        const std::vector<plan::LaunchKind> kinds = launch_kinds();
        ASSERT_FALSE(kinds.empty());
        EXPECT_EQ(kinds.front() == plan::LaunchKind::map, cpu);
        EXPECT_TRUE(product_alone({kinds.begin() + (cpu ? 1 : 0), kinds.end()}));

        // An empty b (no columns, a transpose the CPU copies anyway) has nothing to pad.
        Tensor none = linear(x, finite_tensor(*d, DType::f32, {0, 40}, 8).resolve());
        EXPECT_EQ(none.shape(), (Shape{7, 0}));
        none.resolve();

        // Too few rows of a to pay for a copy, or rows of 1.5 KiB: b as it is.
        Tensor few = matmul(finite_tensor(*d, DType::f32, {64, 1024}, 7).resolve(), b);
        Tensor fine = matmul(a, finite_tensor(*d, DType::f32, {1024, 384}, 6).resolve());
        for (Tensor* t : {&few, &fine}) {
            want = graph::evaluate({t->node()});
            t->resolve();
            EXPECT_TRUE(product_alone(launch_kinds()));
            EXPECT_EQ(t->to_host_bytes(), want[0].bytes());
        }
    }
}

TEST(GraphContract, AnEpilogueOfBiasActivationAndResidualRunsInTheContractionsLaunch) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = finite_tensor(*d, DType::f32, {33, 24}, 8).resolve();
        Tensor w = finite_tensor(*d, DType::f32, {24, 40}, 9, 0.5f).resolve();
        Tensor bias = finite_tensor(*d, DType::f32, {40}, 10).resolve();
        Tensor residual = finite_tensor(*d, DType::f32, {33, 40}, 11).resolve();
        Tensor y = gelu(matmul(x, w) + bias) * 0.5 + residual;
        // Fused, the whole graph is the contraction's launch (whether the cost model picks that
        // form depends on the device's measured rates; both forms give the oracle's bits).
        test::expect_one_fused_launch(y, plan::LaunchKind::contract);
    }
}

TEST(GraphContract, AnEpilogueReadingTheProductElsewhereRunsAfterIt) {
    // c + cᵀ reads c at the transposed element: c is written first, the sum is a map after it.
    expect_graph_everywhere([](Device& d) {
        Tensor a = finite_tensor(d, DType::f32, {21, 7}, 12).resolve();
        Tensor b = finite_tensor(d, DType::f32, {7, 21}, 13).resolve();
        Tensor c = matmul(a, b);
        return std::vector<Tensor>{c + c.transpose(0, 1)};
    });
    EXPECT_EQ(launch_kinds(), (std::vector{plan::LaunchKind::contract, plan::LaunchKind::map}));
}

TEST(GraphContract, AResidualNormalizedAroundALinearPlansWithoutACycle) {
    // Gemma's sandwich norms: h2 = h + rms_norm(a), then h2 + linear(rms_norm(h2)). Both folds
    // share a row group; the residual sum needs the linear, which needs the group's rms_norm(h2),
    // so the sum is written after the linear, not by the group's launch.
    expect_graph_everywhere([](Device& d) {
        Tensor h = finite_tensor(d, DType::f32, {6, 24}, 40).resolve();
        Tensor a = finite_tensor(d, DType::f32, {6, 24}, 41).resolve();
        Tensor g1 = finite_tensor(d, DType::f32, {24}, 42).resolve();
        Tensor g2 = finite_tensor(d, DType::f32, {24}, 43).resolve();
        Tensor w = finite_tensor(d, DType::f32, {24, 24}, 44, 0.5f).resolve();
        Tensor h2 = h + rms_norm(a, g1);
        return std::vector<Tensor>{h2 + linear(rms_norm(h2, g2), w)};
    });
}

Tensor q8_values(Device& d, int64_t n, int64_t k, uint64_t seed) {
    std::vector<int8_t> v(static_cast<size_t>(n * k));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<int8_t>(static_cast<int64_t>((i * 7919 + seed * 104729) % 255) - 127);
    return Tensor::from_host(v, {n, k}, d);
}

TEST(GraphContract, CastsAndADequantizationFeedingAnOperandRunInTheContractionsLaunch) {
    // The operands' prologues (a cast of a; b dequantized from int8 and scales, through reshapes
    // and a broadcast) are computed where the kernel reads them, at every point of every device.
    expect_graph_everywhere(
        [](Device& d) {
            Tensor a = finite_tensor(d, DType::f32, {37, 64}, 24).resolve();
            Tensor scales = finite_tensor(d, DType::f32, {29, 2}, 25, 0.05f).resolve();
            Tensor w = dequantize_q8_0(q8_values(d, 29, 64, 26).resolve(), scales);
            return std::vector<Tensor>{linear(a.to(DType::bf16).to(DType::f32), w)};
        },
        /*sweep=*/true);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor a = finite_tensor(*d, DType::f32, {3, 21, 19}, 27).resolve();
        Tensor b = finite_tensor(*d, DType::f32, {19, 23}, 28).resolve();
        test::expect_one_fused_launch(
            matmul(a.to(DType::f16), b.transpose(0, 1).to(DType::f16).transpose(0, 1)),
            plan::LaunchKind::contract);
        // One row reads each element of the weight once: the planner computes it where it is
        // read (blocks of 16 with mins, as Q6_K's and Q4_K's planar forms), under a GPU's facts
        // and a CPU's (fixed ones: the machine's measured flops swing with its load, and the
        // two forms are within a few percent here); on the device, the oracle's bits.
        Tensor x = finite_tensor(*d, DType::f32, {1, 64}, 35).resolve();
        Tensor scales = finite_tensor(*d, DType::f32, {24, 4}, 36, 0.05f).resolve();
        Tensor mins = finite_tensor(*d, DType::f16, {24, 4}, 38, 0.5f).resolve();
        Tensor y = linear(x, dequantize_blocks(q8_values(*d, 24, 64, 37).resolve(), scales, &mins));
        for (const plan::DeviceFacts& facts : {test::kH200LikeFacts, test::kTwoCoreFacts})
            EXPECT_EQ(test::planned_kinds({y}, facts), std::vector{plan::LaunchKind::contract});
        const auto want_y = graph::evaluate({y.node()});
        y.resolve();
        EXPECT_EQ(y.to_host_bytes(), want_y[0].bytes());
    }
}

TEST(GraphContract, AQ8WeightStoredInputByOutputIsReadInThePrologueAtEveryPoint) {
    // [in, out] int8 values with one f32 scale per 32 inputs of each output (scales [in/32, out]
    // broadcast over [in/32, 32, out]), as kiln.gemma3 keeps its weights: the scale's index,
    // taken apart from the flattened element index (ir/range_index.hpp), gives the oracle's bits
    // at every point; ragged out, 1 and 5 rows of x.
    for (int64_t rows : {1, 5})
        expect_graph_everywhere(
            [rows](Device& d) {
                const int64_t in = 96, out = 37;
                Tensor x = finite_tensor(d, DType::f32, {rows, in}, 41).resolve();
                Tensor scales = finite_tensor(d, DType::f32, {in / 32, out}, 42, 0.05f).resolve();
                Tensor values = q8_values(d, in, out, 43).resolve().to(DType::f32);
                Tensor w = (values.reshape({in / 32, 32, out}) * scales.reshape({in / 32, 1, out}))
                               .reshape({in, out});
                return std::vector<Tensor>{matmul(x, w)};
            },
            /*sweep=*/true);
}

TEST(GraphContract, BlockDequantizationsOfTheWrongShapesOrDtypesAreErrors) {
    Device& d = cpu_device();
    const Tensor values = q8_values(d, 4, 64, 1);
    const Tensor scales = Tensor::zeros({4, 2}, DType::f32, d);
    const Tensor wrong_rows = Tensor::zeros({3, 2}, DType::f32, d);
    const Tensor uneven = Tensor::zeros({4, 3}, DType::f32, d);
    const Tensor int_scales = Tensor::zeros({4, 2}, DType::i32, d);
    test::expect_error_naming("dequantize_blocks", [&] { dequantize_blocks(scales, scales); },
                              {"values are f32 [4, 2]; expected i8"});
    test::expect_error_naming("dequantize_blocks", [&] { dequantize_blocks(values, wrong_rows); },
                              {"scales are f32 [3, 2] for values [4, 64]", "k = 64"});
    test::expect_error_naming("dequantize_blocks", [&] { dequantize_blocks(values, uneven); },
                              {"scales are f32 [4, 3]", "whole blocks"});
    test::expect_error_naming("dequantize_blocks", [&] { dequantize_blocks(values, int_scales); },
                              {"scales are i32 [4, 2]", "a float dtype"});
    test::expect_error_naming(
        "dequantize_blocks", [&] { dequantize_blocks(values, scales, &wrong_rows); },
        {"mins are f32 [3, 2]; expected a float dtype and the scales' shape"});
    test::expect_error_naming("dequantize_q8_0", [&] { dequantize_q8_0(values, uneven); },
                              {"scales are f32 [4, 3] for values [4, 64]; expected a float dtype "
                               "and [4, 2]"});
}

TEST(GraphContract, ADequantizationThatManyRowTilesWouldRepeatIsWrittenFirst) {
    // A prologue runs once per tile of the other side: for a row or a few it is computed where the
    // kernel reads it; for 4096 rows (tens of tiles) a map launch writes the weight once.
    Device& d = cpu_device();
    Tensor scales = finite_tensor(d, DType::f32, {1024, 32}, 40, 0.05f).resolve();
    Tensor w = dequantize_q8_0(q8_values(d, 1024, 1024, 41).resolve(), scales);
    // (On a GPU the product of one row is split into k's chunks as well: its first launch
    // computes the prologue the same way.)
    for (const auto& [facts, name] :
         {std::pair{test::kH200LikeFacts, "gpu"}, std::pair{test::kTwoCoreFacts, "cpu"}}) {
        for (int64_t rows : {1, 4096}) {
            SCOPED_TRACE(fmt::format("{} facts, {} rows", name, rows));
            Tensor x = finite_tensor(d, DType::f32, {rows, 1024}, 42).resolve();
            const auto kinds = test::planned_kinds({linear(x, w)}, facts);
            ASSERT_FALSE(kinds.empty());
            EXPECT_EQ(std::count(kinds.begin(), kinds.end(), plan::LaunchKind::map),
                      rows == 1 ? 0 : 1);
            EXPECT_EQ(kinds.front() == plan::LaunchKind::map, rows > 1);
        }
    }
}

TEST(GraphContract, APrologueInTheTensorCoreClassHasTheBitsOfItsOperandMaterialized) {
    // On tensor cores the class is within a bound of the oracle, so the fused prologue is held to
    // the same class's result with the operand written first (CPU and OpenCL: the oracle's bits).
    // Whether the planner fuses it depends on the device's measured facts, so both forms are run
    // at their default points: the fused one (one contraction launch) and the split one.
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = finite_tensor(*d, DType::bf16, {1, 96}, 29).resolve();
        Tensor scales = finite_tensor(*d, DType::f16, {48, 3}, 30, 0.05f).resolve();
        Tensor w = dequantize_q8_0(q8_values(*d, 48, 96, 31).resolve(), scales).to(DType::bf16);
        Tensor fused = linear(x, w, nullptr, MatmulClass::tensor_core);
        const plan::GraphView g = plan::view_graph({fused.node()});
        const auto groups = plan::fold_groups(g);
        ASSERT_EQ(groups.size(), 1u);
        const plan::Plan one = plan::partition(g, groups, {plan::GroupForm::fused}).plan;
        ASSERT_EQ(one.launches.size(), 1u);
        EXPECT_EQ(one.launches[0].kind, plan::LaunchKind::contract);
        std::vector<std::pair<std::string, std::vector<uint8_t>>> members;
        plan::sweep(
            {fused.node()},
            [&](const plan::Member& m, const auto& got) {
                members.emplace_back(m.fusion + " " + m.schedule, got.at(0));
            },
            plan::SweepPoints::defaults);
        EXPECT_TRUE(std::any_of(members.begin(), members.end(),
                                [](const auto& m) { return m.first.starts_with("fused"); }));
        fused.resolve();
        Tensor w_written = w.resolve();
        Tensor unfused = linear(x, w_written, nullptr, MatmulClass::tensor_core);
        const std::vector<uint8_t> want = unfused.to_host_bytes();
        EXPECT_EQ(fused.to_host_bytes(), want);
        for (const auto& [member, bits] : members) EXPECT_EQ(bits, want) << member;
        if (!d->info().tensor_cores) {
            EXPECT_EQ(fused.to_host_bytes(), graph::evaluate({fused.node()})[0].bytes());
        }
    }
}

TEST(GraphContract, CostlyOrFoldedOperandsAreWrittenFirst) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor a = finite_tensor(*d, DType::f32, {9, 12}, 32).resolve();
        Tensor b = finite_tensor(*d, DType::f32, {12, 10}, 33).resolve();
        // exp would run once per tile of the other side: a map launch writes it once.
        Tensor e = matmul(exp(a), b);
        auto want = graph::evaluate({e.node()});
        e.resolve();
        EXPECT_EQ(launch_kinds(), (std::vector{plan::LaunchKind::map, plan::LaunchKind::contract}));
        EXPECT_EQ(e.to_host_bytes(), want[0].bytes());
        // A product scaled feeds the next matmul from the first one's epilogue.
        Tensor c = finite_tensor(*d, DType::f32, {10, 7}, 34).resolve();
        Tensor f = matmul(matmul(a, b) * 0.5, c);
        want = graph::evaluate({f.node()});
        f.resolve();
        EXPECT_EQ(launch_kinds(),
                  (std::vector{plan::LaunchKind::contract, plan::LaunchKind::contract}));
        EXPECT_EQ(f.to_host_bytes(), want[0].bytes());
    }
}

TEST(GraphContract, AttentionWrittenFromPrimitivesMatchesTheOracle) {
    // softmax(q kᵀ / sqrt(d)) v: a contraction, a fused row launch, a contraction.
    expect_graph_everywhere([](Device& d) {
        Tensor q = finite_tensor(d, DType::f32, {2, 17, 8}, 14).resolve();
        Tensor k = finite_tensor(d, DType::f32, {2, 23, 8}, 15).resolve();
        Tensor v = finite_tensor(d, DType::f32, {2, 23, 8}, 16).resolve();
        Tensor p = softmax(matmul(q, k.transpose(-1, -2)) * (1.0 / std::sqrt(8.0)), -1);
        return std::vector<Tensor>{matmul(p, v)};
    });
}

TEST(GraphContract, VectorsHalfDtypesAndEmptySumsFollowTorchsShapes) {
    expect_graph_everywhere([](Device& d) {
        Tensor u = finite_tensor(d, DType::f32, {19}, 17).resolve();
        Tensor w = finite_tensor(d, DType::f32, {19}, 18).resolve();
        Tensor m = finite_tensor(d, DType::f32, {5, 19}, 19).resolve();
        Tensor h = finite_tensor(d, DType::bf16, {4, 6, 19}, 20).resolve();
        Tensor hv = finite_tensor(d, DType::bf16, {19, 3}, 21).resolve();
        Tensor f = finite_tensor(d, DType::f16, {1, 19}, 22).resolve();
        Tensor fv = finite_tensor(d, DType::f16, {19, 1}, 23).resolve();
        Tensor empty_a = Tensor::zeros({3, 0}, DType::f32, d);
        Tensor empty_b = Tensor::zeros({0, 4}, DType::f32, d);
        std::vector<Tensor> out{matmul(u, w),  matmul(u, m.transpose(0, 1)),
                                matmul(m, w),  matmul(h, hv),
                                matmul(f, fv), matmul(empty_a, empty_b)};
        EXPECT_EQ(out[0].shape(), Shape{});
        EXPECT_EQ(out[1].shape(), Shape{5});
        EXPECT_EQ(out[2].shape(), Shape{5});
        EXPECT_EQ(out[3].dtype(), DType::bf16);
        EXPECT_EQ(out[5].shape(), (Shape{3, 4}));
        return out;
    });
}

TEST(GraphContract, BadOperandsAreErrorsNamingTheShapes) {
    using test::expect_error_naming;
    Device& d = cpu_device();
    auto zeros = [&](const Shape& s, DType t = DType::f32) { return Tensor::zeros(s, t, d); };
    Tensor a = zeros({4, 5});
    expect_error_naming("matmul",
                        [&] {
                            matmul(a, zeros({6, 3}));
                        },
                        {"inner dimensions differ", "[4, 5]", "[6, 3]"});
    expect_error_naming("matmul",
                        [&] {
                            matmul(a, zeros({5, 3}, DType::f16));
                        },
                        {"expected one dtype"});
    expect_error_naming("matmul",
                        [&] {
                            matmul(zeros({4, 5}, DType::i32), zeros({5, 2}, DType::i32));
                        },
                        {"i32", "expected f32, f16 or bf16"});
    expect_error_naming("matmul", [&] { matmul(zeros({}), a); }, {"scalar"});
    expect_error_naming("matmul",
                        [&] {
                            matmul(zeros({2, 4, 5}), zeros({3, 5, 2}));
                        },
                        {"batch axes", "[2]", "[3]"});
    Tensor w = zeros({7, 5});
    Tensor bad_bias = zeros({5});
    expect_error_naming("linear", [&] { linear(a, w, &bad_bias); }, {"bias is f32 [5]", "[7]"});
    expect_error_naming("linear", [&] { linear(a, zeros({7, 4})); }, {"in_features = 4"});
    expect_error_naming("dequantize_q8_0",
                        [&] {
                            dequantize_q8_0(zeros({4, 64}), zeros({4, 2}));
                        },
                        {"values are f32 [4, 64]", "expected i8"});
    expect_error_naming("dequantize_q8_0",
                        [&] {
                            dequantize_q8_0(zeros({4, 48}, DType::i8), zeros({4, 2}));
                        },
                        {"[4, 48]", "multiple of 32"});
    expect_error_naming("dequantize_q8_0",
                        [&] {
                            dequantize_q8_0(zeros({4, 64}, DType::i8), zeros({4, 3}));
                        },
                        {"scales are f32 [4, 3]", "expected a float dtype and [4, 2]"});
}

}  // namespace
}  // namespace kiln
