// The planner's behaviour: fusion, the replay cache, racing (in-place launches on scratch),
// schedule domains, and index arithmetic past 2^31.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "ir/print.hpp"
#include "plan/choose.hpp"
#include "plan/graph_view.hpp"
#include "plan/index.hpp"
#include "plan/lower_launch.hpp"
#include "plan/partition.hpp"
#include "plan/resolve.hpp"
#include "plan/roofline.hpp"
#include "plan/sweep.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

// The plans these tests check are the ones a 2-core machine's facts give (support/graph_check.hpp).
[[maybe_unused]] const int kGivenFacts = test::give_cpu_facts();

using test::expect_graph_everywhere;
using test::finite_tensor;

// Fused, softmax saves two launches and two passes over x. On a GPU that is the choice; on a
// few CPU cores the exps dominate and the forms are near a tie, so the CPU's choice is pinned
// under fixed facts rather than the machine's measured ones.
TEST(GraphPlan, SoftmaxIsOneLaunch) {
    const std::vector row{plan::LaunchKind::row};
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = finite_tensor(*d, DType::f32, {64, 500}, 1).resolve();
        Tensor y = softmax(x, -1);
        EXPECT_EQ(test::planned_kinds({y}, test::kH200LikeFacts), row);
        EXPECT_EQ(test::planned_kinds({y}, test::kTwoCoreFacts), row);
        const auto want = graph::evaluate({y.node()});
        y.resolve();
        EXPECT_EQ(y.to_host_bytes(), want[0].bytes());
        if (plan::device_facts(*d).gpu) {
            EXPECT_EQ(test::launch_kinds(), row);
        }
    }
}

// KILN_DUMP=plan prints the graph, the fusion decisions and every point of each launch's domain
// with its estimate, the one chosen marked: the point the executable runs. (Which form wins is
// the machine's measured facts' choice: on two CPU cores one launch or three, as the measured
// launch cost and rates swing with the machine's load, so the dump is checked for the plan the
// planner makes here.)
TEST(GraphPlan, KilnDumpPlanShowsTheGraphTheFormsAndEveryPointOfTheDomain) {
    Device& d = cpu_device();
    Tensor x = finite_tensor(d, DType::f32, {7, 300}, 4).resolve();
    Tensor y = softmax(x, -1) * 2.0;
    const plan::Plan planned =
        plan::choose_plan(plan::view_graph({y.node()}), plan::device_facts(d), true);
    ASSERT_GE(planned.launches.size(), 1u);
    plan::clear_plan_cache();
    ::setenv("KILN_DUMP", "source_x,plan", 1);
    ::testing::internal::CaptureStderr();
    y.resolve();
    const std::string dump = ::testing::internal::GetCapturedStderr();
    ::unsetenv("KILN_DUMP");
    using ::testing::HasSubstr;
    EXPECT_THAT(dump, HasSubstr("%0 = leaf f32 [7, 300]"));
    EXPECT_THAT(dump, HasSubstr("= fold max [1] f32 [7] <- %0  (softmax)"));
    EXPECT_THAT(dump, HasSubstr("= map mul f32 [7, 300] <- %"));
    EXPECT_THAT(dump, HasSubstr("fusion:\n  every group fused where it can be: "));
    EXPECT_THAT(dump, HasSubstr("group 0 split: "));
    EXPECT_THAT(dump, HasSubstr("group 0 segments refused: the group's folds are too short"));
    const auto exec = plan::last_executable();
    ASSERT_EQ(exec->launches.size(), planned.launches.size());
    for (size_t i = 0; i < planned.launches.size(); ++i)
        EXPECT_THAT(dump, HasSubstr(fmt::format("\nlaunch {}: {} ", i,
                                                plan::name(planned.launches[i].kind))));
    // The one-launch form is the row launch writing the product.
    if (planned.launches.size() == 1) {
        EXPECT_THAT(dump, HasSubstr("launch 0: row writes %12\n"));
    }
    // Every point of the first launch's domain, once; the executable's point is the one chosen.
    size_t points = 0;
    for (const plan::Schedule& s : planned.launches[0].domain) {
        const std::string point = plan::to_string(planned.launches[0].kind, s);
        EXPECT_THAT(dump, HasSubstr("    " + point + " ")) << point;
        ++points;
    }
    EXPECT_GT(points, 1u);
    const std::string chosen = exec->launches[0].record.schedule;
    const size_t at = dump.find("    " + chosen + " ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(dump.substr(at, dump.find('\n', at) - at).find("CHOSEN") != std::string::npos, true)
        << dump;
    size_t chosen_points = 0;
    for (size_t at_chosen = dump.find("CHOSEN"); at_chosen != std::string::npos;
         at_chosen = dump.find("CHOSEN", at_chosen + 1))
        ++chosen_points;
    EXPECT_EQ(chosen_points, planned.launches.size()) << "one point chosen a launch";

    // Unset, or another word: nothing is printed.
    plan::clear_plan_cache();
    ::setenv("KILN_DUMP", "planned", 1);
    ::testing::internal::CaptureStderr();
    (softmax(x, -1) * 2.0).resolve();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    ::unsetenv("KILN_DUMP");
}

TEST(GraphPlan, MapsFuseIntoOneLaunchWithSeveralOutputs) {
    Device& d = cpu_device();
    Tensor a = finite_tensor(d, DType::f32, {1000}, 2).resolve();
    Tensor b = finite_tensor(d, DType::f32, {1000}, 3).resolve();
    Tensor s = a + b;
    std::vector<Tensor> outs{s * s, exp(s), s - 1.0};
    resolve(outs);
    EXPECT_EQ(plan::last_executable()->launches.size(), 1u);
}

// A generator is computed where it is read unless the model finds storing it cheaper: randn
// read by three fold groups (column sums, softmax's rows, row maxima) is computed once into a
// buffer on two CPU cores, while on a GPU's flops recomputing it costs less than one more
// launch; read by one launch (softmax of rms_norm, its rows kept in registers on the CPU), it
// is not stored. Every member, stored and inlined, gives the oracle's bits.
TEST(GraphPlan, AGeneratorReadBySeveralLaunchesIsStoredOnce) {
    auto stores = [](const std::vector<Tensor>& ts, const plan::DeviceFacts& facts) {
        const plan::GraphView g = plan::view_graph(test::nodes_of(ts));
        const plan::Plan p = plan::choose_plan(g, facts, true);
        for (int n : p.materialized)
            if (g.node(n).as<graph::op::Generate>()) return true;
        return false;
    };
    Device& cpu = cpu_device();
    Tensor x = Tensor::randn({256, 300}, 5, DType::f32, cpu);
    const std::vector<Tensor> three{sum(x, {0}), softmax(x, -1), max(x, {1})};
    EXPECT_TRUE(stores(three, test::kTwoCoreFacts));
    EXPECT_FALSE(stores(three, test::kH200LikeFacts));
    Tensor big = Tensor::randn({4096, 4096}, 1, DType::f32, cpu);
    Tensor w = Tensor::ones({4096}, DType::f32, cpu);
    EXPECT_FALSE(stores({softmax(rms_norm(big, w) * 2.0, -1)}, test::kTwoCoreFacts));
    // Every form with the generator inlined and stored, each launch at its default point (the
    // points themselves are swept by the tests of each launch kind).
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor r = Tensor::randn({33, 70}, 9, DType::f32, *d);
        const std::vector<Tensor> outs{sum(r, {0}), softmax(r, -1), max(r, {1})};
        const auto want = graph::evaluate(test::nodes_of(outs));
        int stored_members = 0;
        const int members = plan::sweep(
            test::nodes_of(outs),
            [&](const plan::Member& m, const std::vector<std::vector<uint8_t>>& got) {
                SCOPED_TRACE(m.fusion);
                stored_members += m.fusion.ends_with("generators stored");
                for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i].bytes());
            },
            plan::SweepPoints::defaults);
        EXPECT_GT(stored_members, 0);
        EXPECT_EQ(2 * stored_members, members);  // every form both ways
    }
}

// Blocks alike at different places in the graph (each rows of the last block's result picked by
// index, so its kernel has a fault site, a layer_norm and a linear): the third block's launches are
// the second's kernels, and each point of each launch lowered through the memo is what lower_launch
// writes for it alone: the same kernel, its own buffers, fault sites and sizes.
// On a CPU, a block's threads sharing a row walk it one after another, pass after pass (about
// ten times a thread per row's time, measured); threads keeping the row's elements walk it once.
// So the cost model ranks the kept row first where each element's exp would run twice
// (softmax's sum, then its output), a thread per row first where the maps are cheap (rms_norm),
// and the threads walking the row in turn below both, out of the race's three.
TEST(GraphPlan, OnTheCpuARowKeptByItsThreadsRanksFirstWhereItSavesTheExpsAndTheWalksInTurnLast) {
    Device& cpu = cpu_device();
    const Tensor x = Tensor::zeros({1024, 4096}, DType::f32, cpu).resolve();
    const Tensor w = Tensor::zeros({4096}, DType::f32, cpu).resolve();
    for (const auto& [y, kept_first] :
         {std::pair{softmax(x, -1), true}, std::pair{rms_norm(x, w, 1e-6), false}}) {
        const plan::GraphView g = plan::view_graph({y.node()});
        const plan::Plan p = plan::choose_plan(g, test::kTwoCoreFacts, true);
        ASSERT_EQ(p.launches.size(), 1u);
        const plan::Launch& l = p.launches[0];
        ASSERT_EQ(l.kind, plan::LaunchKind::row);
        const std::vector<size_t> order =
            plan::rank_points(g, plan::materialized_set(g, p), l, test::kTwoCoreFacts);
        ASSERT_GE(order.size(), 4u);
        const plan::Schedule& first = l.domain[order[0]];
        EXPECT_EQ(first.cache, kept_first) << plan::to_string(l.kind, first);
        if (!kept_first) {
            EXPECT_EQ(first.threads, 1);
        }
        for (size_t i = 0; i < 3; ++i) {
            const plan::Schedule& s = l.domain[order[i]];
            EXPECT_TRUE(s.threads == 1 || s.cache) << plan::to_string(l.kind, s);
        }
    }
}

TEST(GraphPlan, LaunchesAlikeAreLoweredOnceWithTheirOwnBuffersAndFaultSites) {
    Device& cpu = cpu_device();
    Tensor table = Tensor::randn({5, 24}, 1, DType::f32, cpu).resolve();
    Tensor w = Tensor::randn({24, 24}, 2, DType::f32, cpu).resolve();
    Tensor ids = Tensor::from_host(std::vector<int64_t>{3, 0, 1, 4, 4}, {5});
    Tensor other_ids = Tensor::from_host(std::vector<int64_t>{1, 2, 2, 0, 4}, {5});
    auto block = [&](const Tensor& h, const Tensor& at) {
        return linear(layer_norm(index_select(h, 0, at) + table), w);
    };
    // The first block reads a leaf, the second and third a linear's result: those two are alike.
    Tensor h = Tensor::randn({5, 24}, 3, DType::f32, cpu).resolve();
    for (int i = 0; i < 3; ++i) h = block(h, i == 1 ? other_ids : ids);
    const plan::GraphView g = plan::view_graph({h.node()});
    const plan::Plan p = plan::choose_plan(g, test::kTwoCoreFacts, true);
    const auto materialized = plan::materialized_set(g, p);
    plan::LoweringMemo memo(g, materialized);
    std::vector<const ir::StmtNode*> bodies;
    int copies = 0, copies_with_fault_sites = 0;
    for (const plan::Launch& l : p.launches)
        for (const plan::Schedule& s : l.domain) {
            SCOPED_TRACE(fmt::format("{} {}", l.label, plan::to_string(l.kind, s)));
            const plan::LoweredLaunch got = memo.lower(l, s);
            const plan::LoweredLaunch want = plan::lower_launch(g, materialized, l, s);
            EXPECT_EQ(ir::print(got.kernel), ir::print(want.kernel));
            EXPECT_EQ(got.buffers, want.buffers);
            EXPECT_EQ(got.scalar_sites, want.scalar_sites);
            ASSERT_EQ(got.scalars.size(), want.scalars.size());
            for (size_t j = 0; j < got.scalars.size(); ++j) {
                EXPECT_EQ(got.scalars[j].dtype, want.scalars[j].dtype);
                EXPECT_EQ(got.scalars[j].bits, want.scalars[j].bits);
            }
            EXPECT_EQ(got.grid, want.grid);
            EXPECT_EQ(got.size_bucket, want.size_bucket);
            const bool copy =
                std::find(bodies.begin(), bodies.end(), got.kernel.body.get()) != bodies.end();
            copies += copy;
            copies_with_fault_sites +=
                copy && std::any_of(got.scalar_sites.begin(), got.scalar_sites.end(),
                                    [](int n) { return n >= 0; });
            bodies.push_back(got.kernel.body.get());
        }
    // The third block's launches are copies, the one with its gather among them.
    EXPECT_GE(copies, 2);
    EXPECT_GE(copies_with_fault_sites, 1);
}

TEST(GraphPlan, TheSecondResolveOfAGraphReplaysItsPlan) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto input = [&](uint64_t seed) {
            return finite_tensor(*d, DType::f32, {300, 70}, seed).resolve();
        };
        auto build = [&](const Tensor& a) { return layer_norm(a * 2.0) + 1.0; };
        Tensor first = build(input(4));
        first.resolve();
        Tensor a = input(4);
        const auto before = plan::counters();
        Tensor second = build(a);
        second.resolve();
        const auto after = plan::counters();
        EXPECT_EQ(after.hits, before.hits + 1);
        EXPECT_EQ(after.misses, before.misses);
        EXPECT_EQ(first.to_host_bytes(), second.to_host_bytes());
        // Other data: the same plan.
        Tensor b = input(5);
        const auto before_third = plan::counters();
        Tensor third = build(b);
        third.resolve();
        EXPECT_EQ(plan::counters().hits, before_third.hits + 1);
        EXPECT_NE(first.to_host_bytes(), third.to_host_bytes());
    }
}

TEST(GraphPlan, RacingAnInPlaceScatterLeavesTheUsersDataAlone) {
    plan::options().race = true;
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        std::vector<float> base(40 * 3);
        for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i) * 0.25f;
        Tensor x = Tensor::from_host(base, {40, 3}, *d);
        std::vector<int32_t> idx(60 * 3);
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>((i * 7) % 40);
        Tensor index = Tensor::from_host(idx, {60, 3}, *d);
        Tensor src = finite_tensor(*d, DType::f32, {60, 3}, 6);
        Tensor y = scatter_add(x, 0, index, src);
        const auto want = graph::evaluate({y.node()});
        y.resolve();
        EXPECT_EQ(y.to_host_bytes(), want[0].bytes());
        EXPECT_EQ(x.to_host<float>(), base);
        bool raced_or_cached = false;
        for (const auto& l : plan::last_executable()->launches)
            if (l.kind == plan::LaunchKind::scatter)
                raced_or_cached = l.record.raced ||
                                  l.record.not_raced == "the tuner's cached decision" ||
                                  l.record.not_raced == "its size range's raced winner";
        EXPECT_TRUE(raced_or_cached);
    }
    plan::options().race = false;
}

TEST(GraphPlan, KilnRaceChoosesBudgetedThoroughOrNoRacing) {
    const char* saved = std::getenv("KILN_RACE");
    const std::optional<std::string> before =
        saved ? std::optional<std::string>(saved) : std::nullopt;
    auto with = [](const char* value) {
        setenv("KILN_RACE", value, 1);
        return plan::options_from_environment();
    };
    for (const char* budgeted : {"", "1"}) {
        EXPECT_TRUE(with(budgeted).race) << budgeted;
        EXPECT_FALSE(with(budgeted).thorough) << budgeted;
    }
    EXPECT_TRUE(with("thorough").race);
    EXPECT_TRUE(with("thorough").thorough);
    EXPECT_FALSE(with("0").race);
    EXPECT_THAT(test::error_of([&] { with("fast"); }),
                ::testing::HasSubstr("KILN_RACE is 'fast'; expected 1 (race within a budget, the "
                                     "default), thorough"));
    if (before)
        setenv("KILN_RACE", before->c_str(), 1);
    else
        unsetenv("KILN_RACE");
}

TEST(GraphPlan, EveryLaunchHasMoreThanOnePoint) {
    Device& d = cpu_device();
    Tensor x = finite_tensor(d, DType::f32, {3, 5}, 7);
    std::vector<int32_t> i{0, 1, 2};
    Tensor idx = Tensor::from_host(i, {3, 1}, d);
    std::vector<Tensor> outs{softmax(x), sum(x), x.transpose(0, 1) + 1.0,
                             scatter_add(x, 0, idx.expand({3, 5}), x)};
    const auto g = plan::view_graph(test::nodes_of(outs));
    const auto groups = plan::fold_groups(g);
    for (auto form : {plan::GroupForm::fused, plan::GroupForm::split, plan::GroupForm::segments}) {
        std::vector<plan::GroupForm> forms(groups.size(), form);
        const auto plan = plan::partition_or_split(g, groups, forms);
        for (const auto& l : plan.launches) EXPECT_GE(l.domain.size(), 2u) << plan::name(l.kind);
    }
}

TEST(GraphPlan, WholeTensorAndColumnReductionsInEveryMember) {
    expect_graph_everywhere(
        [](Device& d) {
            Tensor x = finite_tensor(d, DType::f32, {40, 33}, 8);
            return std::vector<Tensor>{sum(x), max(x, {0}), sum(x * x, {0}, true) - x};
        },
        true);
}

// Maps that read through permutes, reshapes, broadcasts, slices and pads (a transformer's
// heads split and merged, a bias, a normalization's row statistics): on the CPU their domain has
// the row-loop points, and every point of every member gives the oracle's bits. Ragged extents;
// rows of 24 (heads of 8) where the row length is the gcd of the views' last extents.
TEST(GraphPlan, MapsThroughViewsInEveryRowLoopPoint) {
    auto build = [](Device& d) {
        Tensor x = finite_tensor(d, DType::f32, {3, 5, 24}, 21);
        Tensor bias = finite_tensor(d, DType::f32, {24}, 22);
        Tensor heads = (x + bias).reshape({3, 5, 3, 8}).permute({0, 2, 1, 3});
        Tensor merged = (heads * 2.0).permute({0, 2, 1, 3}).reshape({3, 5, 24});
        Tensor stats = finite_tensor(d, DType::f32, {3, 5, 1}, 23);
        Tensor scaled = (x - stats) * bias;
        Tensor edges = x.slice(2, 1, 23, 2).pad({{0, 0}, {1, 2}, {0, 1}}, 0.5) - 1.0;
        // A permute's coordinates reshaped to axes that split one of them.
        Tensor split = finite_tensor(d, DType::f32, {2, 5, 6, 3}, 24).reshape({2, 30, 3});
        return std::vector<Tensor>{heads + 0.0, merged, scaled, edges,
                                   split.permute({0, 2, 1}) * 3.0};
    };
    expect_graph_everywhere(build, true);
    // The CPU's plan for the heads: its map launch offers the row-loop form.
    const auto g = plan::view_graph(test::nodes_of(build(cpu_device())));
    const auto plan = plan::choose_plan(g, plan::device_facts(cpu_device()), false);
    int looped = 0;
    for (const auto& l : plan.launches)
        for (const plan::Schedule& s : l.domain)
            if (s.row_loop) {
                EXPECT_EQ(plan::to_string(l.kind, s).rfind("rows_t", 0), 0u);
                ++looped;
            }
    EXPECT_GT(looped, 0);
}

// A reshape of an index whose coordinates are given regroups them: axes kept on both sides keep
// their coordinate, a merge multiplies and adds, and only a split divides, its own coordinate.
// An index in a row's run (Index::Run) takes each coordinate from the row or from the offset.
TEST(GraphPlan, AReshapeOfGivenCoordinatesDividesOnlyWhereItSplits) {
    KernelBuilder k("reshape_probe", 1);
    auto out = k.output("out", DType::i32);
    std::vector<Expr> c;
    for (const char* name : {"a", "b", "c", "d"}) c.push_back(k.scalar(name, DType::i32));
    plan::Index idx({2, 3, 4, 5}, DType::i32, c);
    std::vector<Expr> merged = idx.reshaped({6, 20}).coords();
    std::vector<Expr> split = idx.reshaped({2, 3, 2, 2, 5}).coords();
    Expr row = k.scalar("row", DType::i32), offset = k.scalar("offset", DType::i32);
    plan::Index in_run({6, 20}, DType::i32, row * 20 + offset, {row, offset});
    in_run.run = plan::Index::Run{row, offset, 20};
    std::vector<Expr> from_run = in_run.reshaped({2, 3, 4, 5}).coords();
    std::vector<Expr> all = merged;
    all.insert(all.end(), split.begin(), split.end());
    all.insert(all.end(), from_run.begin(), from_run.end());
    for (size_t i = 0; i < all.size(); ++i) out[int(i)] = all[i];
    const ir::Kernel kernel = k.finish();
    std::vector<std::string> text;
    for (const Expr& e : all) text.push_back(ir::print(e.node(), kernel));
    using ::testing::HasSubstr;
    using ::testing::Not;
    for (size_t i : {0, 1}) {
        EXPECT_THAT(text[i], Not(HasSubstr("/"))) << text[i];
        EXPECT_THAT(text[i], Not(HasSubstr("%"))) << text[i];
    }
    EXPECT_THAT(text[0], HasSubstr("a"));
    EXPECT_THAT(text[0], HasSubstr("b"));
    EXPECT_THAT(text[1], HasSubstr("c"));
    EXPECT_THAT(text[1], HasSubstr("d"));
    EXPECT_EQ(text[2], "a");
    EXPECT_EQ(text[3], "b");
    EXPECT_THAT(text[4], HasSubstr("/ 2"));
    EXPECT_THAT(text[5], HasSubstr("% 2"));
    EXPECT_EQ(text[6], "d");
    // From the run: the first two axes from the row, the last two from the offset.
    for (size_t i : {7, 8}) EXPECT_THAT(text[i], Not(HasSubstr("offset"))) << text[i];
    for (size_t i : {9, 10}) EXPECT_THAT(text[i], Not(HasSubstr("row"))) << text[i];
}

// The path of tensors past 2^31 elements: i64 index arithmetic, every member, on small shapes.
TEST(GraphPlan, WideIndexArithmeticGivesTheSameBits) {
    plan::options().wide_index = true;
    expect_graph_everywhere(
        [](Device& d) {
            Tensor x = finite_tensor(d, DType::f32, {7, 130}, 9);
            std::vector<int32_t> i{6, 0, 3};
            Tensor idx = Tensor::from_host(i, {3}, d);
            return std::vector<Tensor>{softmax(x), sum(x),
                                       x.transpose(0, 1).slice(0, 1, 100, 3) * 2.0,
                                       index_select(x, 0, idx)};
        },
        true);
    plan::options().wide_index = false;
}

// A whole-tensor sum long enough that the segments form (two launches) is the cost model's choice.
TEST(GraphPlan, ALongSumFoldsInTwoLaunchesWithTheOraclesBits) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Tensor x = finite_tensor(*d, DType::f32, {int64_t{1} << 22}, 10).resolve();
        Tensor s = sum(x);
        const auto want = graph::evaluate({s.node()});
        s.resolve();
        EXPECT_EQ(s.to_host_bytes(), want[0].bytes());
        const auto& launches = plan::last_executable()->launches;
        ASSERT_EQ(launches.size(), 2u);
        EXPECT_EQ(launches[0].kind, plan::LaunchKind::segments);
    }
}

// An argmax has no segments form: a row launch folds the segments and their values itself,
// its threads sharing the last level (4 lanes over the 16 segments of 2^16 elements).
TEST(GraphPlan, ALongArgmaxRunsEveryPointItsLastLevelAllows) {
    expect_graph_everywhere(
        [](Device& d) {
            Tensor x = finite_tensor(d, DType::f32, {int64_t{1} << 16}, 11);
            return std::vector<Tensor>{argmax(x)};
        },
        true);
}

// CUDA without a GPU: every member kernel of a set of graphs, compiled by NVRTC for sm_90.
TEST(GraphPlan, EveryMemberKernelCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    Device& d = cpu_device();
    Tensor x = Tensor::from_host(std::vector<float>(6 * 70), {6, 70}, d);
    Tensor w = Tensor::from_host(std::vector<float>(70), {70}, d);
    std::vector<int32_t> rows{1, 0, 5};
    Tensor idx = Tensor::from_host(rows, {3}, d);
    Tensor h = cast(x, DType::f16);
    std::vector<Tensor> outs{
        softmax(x),
        layer_norm(x, 1, &w, &w),
        rms_norm(h, cast(w, DType::f16)),
        sum(x),
        argmax(x, 0),
        index_select(x, 0, idx),
        scatter_add(x, 0, idx.reshape({3, 1}).expand({3, 70}), x.slice(0, 0, 3)),
        concat({x.pad({{0, 0}, {2, 1}}).slice(1, 0, 70), x.transpose(0, 1).reshape({6, 70})}, 0)};
    const auto kernels = plan::member_kernels(test::nodes_of(outs));
    ASSERT_GT(kernels.size(), 20u);
    std::string log;
    EXPECT_NO_THROW(cuda::nvrtc_compile(generate_source(Backend::cuda, kernels), "sm_90", &log))
        << log;
}

// The same for a matmul with a prologue and an epilogue whose k has two chunks: its members
// include the chunks form's two launches at every point.
TEST(GraphPlan, EveryMemberKernelOfAMatmulSplitByItsChunksCompilesForCuda) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    Device& d = cpu_device();
    Tensor x = Tensor::from_host(std::vector<float>(3 * 300), {3, 300}, d);
    Tensor w = Tensor::from_host(std::vector<float>(300 * 20), {300, 20}, d);
    Tensor b = Tensor::from_host(std::vector<float>(20), {20}, d);
    const auto kernels =
        plan::member_kernels({relu(matmul(cast(x, DType::bf16).to(DType::f32), w) + b).node()});
    const auto chunked = [](const ir::Kernel& k) {
        return k.name.find("contract_chunks") != std::string::npos ||
               k.name.find("chunk_sum") != std::string::npos;
    };
    ASSERT_GE(std::count_if(kernels.begin(), kernels.end(), chunked), 4);
    std::string log;
    EXPECT_NO_THROW(cuda::nvrtc_compile(generate_source(Backend::cuda, kernels), "sm_90", &log))
        << log;
}

}  // namespace
}  // namespace kiln
