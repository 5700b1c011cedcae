// Fusion legality (src/plan/fusion_legality.hpp): each kind of refusal is found from the graph
// before any kernel is lowered and returned (group, form, reason), never thrown; legal forms are
// not refused; partition_or_split splits the refused group; and the reason reaches the plan dump
// and the executable `kiln profile` prints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "graph/oracle.hpp"
#include "kiln/tensor.hpp"
#include "plan/choose.hpp"
#include "plan/domain.hpp"
#include "plan/fusion_legality.hpp"
#include "plan/graph_view.hpp"
#include "plan/partition.hpp"
#include "plan/resolve.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

// A resolved f32 tensor on the CPU holding small distinct values (no kernel runs to make it).
Tensor leaf(const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(graph::element_count(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
    return Tensor::from_host(v, shape);
}

struct Proposal {
    plan::GraphView g;
    std::vector<plan::FoldGroup> groups;
};

Proposal propose(const std::vector<Tensor>& ts) {
    std::vector<graph::NodeRef> nodes;
    for (const auto& t : ts) nodes.push_back(t.node());
    Proposal p{plan::view_graph(nodes), {}};
    p.groups = plan::fold_groups(p.g);
    return p;
}

// The refusal partition gives with every group in `form`.
std::optional<plan::FusionRefusal> refusal(const Proposal& p, plan::GroupForm form) {
    const std::vector<plan::GroupForm> forms(p.groups.size(), form);
    const plan::Partitioned out = plan::partition(p.g, p.groups, forms);
    if (out.refusal) {
        EXPECT_TRUE(out.plan.launches.empty());
    }
    return out.refusal;
}

// With p's groups all in `form`, group `group` is refused with exactly `reason`.
void expect_refused(const Proposal& p, plan::GroupForm form, int group, const std::string& reason) {
    const auto r = refusal(p, form);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->group, group);
    EXPECT_EQ(r->form, form);
    EXPECT_EQ(r->reason, reason);
}

// The graph position of the one node of `op` kind T in p's graph.
template <typename T>
int only(const Proposal& p) {
    int found = -1;
    for (size_t i = 0; i < p.g.size(); ++i)
        if (!p.g.is_leaf(int(i)) && p.g.node(int(i)).as<T>()) {
            EXPECT_EQ(found, -1) << "more than one";
            found = int(i);
        }
    EXPECT_GE(found, 0);
    return found;
}

std::string described(const Proposal& p, int n) {
    return fmt::format("%{} ({})", n, graph::describe(p.g.node(n)));
}

TEST(FusionLegality, LegalFormsAreNotRefused) {
    const Proposal softmax_rows = propose({softmax(leaf({6, 37}), -1)});
    const plan::Partitioned fused =
        plan::partition(softmax_rows.g, softmax_rows.groups, {plan::GroupForm::fused});
    EXPECT_FALSE(fused.refusal.has_value());
    ASSERT_EQ(fused.plan.launches.size(), 1u);
    EXPECT_EQ(fused.plan.launches[0].kind, plan::LaunchKind::row);
    // A long row's sum, one value a row: the segments form.
    EXPECT_FALSE(refusal(propose({sum(leaf({2, 16400}), {1})}), plan::GroupForm::segments));
    // A matmul with its bias and activation in its store.
    Tensor b = leaf({1, 5});
    EXPECT_FALSE(
        refusal(propose({relu(matmul(leaf({3, 4}), leaf({4, 5})) + b)}), plan::GroupForm::fused));
}

// A matmul's segments form splits k's chunks across blocks: none with one chunk of k, and no
// other contraction has split points.
TEST(FusionLegality, OnlyAMatmulWithSeveralChunksOfKHasASegmentsForm) {
    expect_refused(propose({matmul(leaf({3, 4}), leaf({4, 5})) + 1.0}), plan::GroupForm::segments,
                   0, "no split point applies (k = 4: 1 chunk(s) of 256 terms)");
    expect_refused(propose({conv1d(leaf({1, 2, 300}), leaf({3, 2, 3}))}), plan::GroupForm::segments,
                   0, "only a matmul's k is split into chunks");
    EXPECT_FALSE(refusal(propose({matmul(leaf({3, 257}), leaf({257, 5})) + 1.0}),
                         plan::GroupForm::segments));
}

TEST(FusionLegality, ShortFoldsHaveNoSegments) {
    expect_refused(propose({sum(leaf({3, 50}), {1})}), plan::GroupForm::segments, 0,
                   "the group's folds are too short for segments");
}

TEST(FusionLegality, SegmentsWriteOnlyOneValueARow) {
    const Proposal p = propose({softmax(leaf({2, 16400}), -1)});
    expect_refused(p, plan::GroupForm::segments, 0,
                   fmt::format("node {} is not one value a row", described(p, p.g.outputs[0])));
}

TEST(FusionLegality, SegmentsFoldsMustNotReadEachOther) {
    Tensor x = leaf({2, 16400});
    Tensor centred = x - mean(x, {1}, true);
    const Proposal p = propose({sum(centred * centred, {1})});
    ASSERT_EQ(p.groups.size(), 1u);
    ASSERT_EQ(p.groups[0].folds.size(), 2u);
    expect_refused(p, plan::GroupForm::segments, 0,
                   fmt::format("the group's folds read each other (node %{} reads %{})",
                               p.groups[0].folds[1], p.groups[0].folds[0]));
}

// sum(x[ids] * rowsum(x)) over rows: both sums fold [5, 24] over its rows, so they group, but the
// second folds a gather (always its own launch) of a map of the first's result. One launch for
// the group would wait for the gather's, which waits for it: the group is refused and split, and
// the split plan gives the oracle's bits.
TEST(FusionLegality, AGroupWhoseFoldReadsAGatherOfItsOwnResultIsRefused) {
    Tensor x = leaf({5, 24});
    Tensor ids = Tensor::from_host(std::vector<int64_t>{3, 0, 1, 4, 4}, {5});
    Tensor y = sum(index_select(sum(x, {1}, true) * x, 0, ids), {1});
    const Proposal p = propose({y});
    ASSERT_EQ(p.groups.size(), 1u);
    ASSERT_EQ(p.groups[0].folds.size(), 2u);
    const auto r = refusal(p, plan::GroupForm::fused);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->group, 0);
    EXPECT_THAT(r->reason,
                ::testing::HasSubstr(fmt::format("node %{} ({}) reads node ", p.groups[0].folds[1],
                                                 graph::describe(p.g.node(p.groups[0].folds[1])))));
    EXPECT_THAT(r->reason, ::testing::HasSubstr("written by a launch that needs the group's"));
    const auto want = graph::evaluate({y.node()});
    y.resolve();
    EXPECT_EQ(y.to_host_bytes(), want[0].bytes());
}

// x + sᵀ: each element of row r adds the sum of row c (its column), not its own row's.
Tensor row_sums_transposed(Tensor x) {
    return x + sum(x, {1}, true).transpose(0, 1);
}

TEST(FusionLegality, AFoldReadAtAnotherRowIsRefused) {
    const Proposal p = propose({row_sums_transposed(leaf({5, 5}))});
    const std::string reason =
        fmt::format("node {} is read at another row than the one its launch computes",
                    described(p, only<graph::op::Fold>(p)));
    expect_refused(p, plan::GroupForm::fused, 0, reason);
    // Split instead: the sum is written, and a map launch reads it.
    std::vector<plan::GroupForm> forms{plan::GroupForm::fused};
    std::vector<plan::FusionRefusal> refusals;
    const plan::Plan split = plan::partition_or_split(p.g, p.groups, forms, &refusals);
    EXPECT_EQ(forms, std::vector{plan::GroupForm::split});
    ASSERT_EQ(refusals.size(), 1u);
    EXPECT_EQ(refusals[0].reason, reason);
    ASSERT_EQ(split.launches.size(), 2u);
    EXPECT_EQ(split.launches[1].kind, plan::LaunchKind::map);
    // The same read of the sum's own row is legal: x + s.
    Tensor x = leaf({5, 5});
    EXPECT_FALSE(refusal(propose({x + sum(x, {1}, true)}), plan::GroupForm::fused));
}

TEST(FusionLegality, AnEpilogueReadingTheProductAtAnotherElementIsRefused) {
    Tensor c = matmul(leaf({4, 3}), leaf({3, 4}));
    const Proposal p = propose({c + c.transpose(0, 1)});
    expect_refused(p, plan::GroupForm::fused, 0,
                   fmt::format("node {} is read at another element than the one its launch "
                               "computes",
                               described(p, only<graph::op::Matmul>(p))));
}

TEST(FusionLegality, AFoldOfAnotherGroupNoLaunchWritesIsRefused) {
    // The row sums (over axis 1, not written: only x / them is) read the column means (a fold
    // over axis 0, a group of its own that writes nothing while the row sums' group is fused).
    Tensor x = leaf({4, 6});
    const Proposal p = propose({x / sum(x * mean(x, {0}, true), {1}, true)});
    ASSERT_EQ(p.groups.size(), 2u);
    expect_refused(p, plan::GroupForm::fused, 1,
                   fmt::format("node {} is needed but neither computed in this launch nor "
                               "written by an earlier one",
                               described(p, p.groups[0].folds.at(0))));
}

// The launch check alone, on a launch built by hand: a row launch of x + sᵀ's group.
TEST(FusionLegality, ALaunchIsCheckedDirectly) {
    const Proposal p = propose({row_sums_transposed(leaf({5, 5}))});
    const int s = only<graph::op::Fold>(p);
    plan::Launch l;
    l.kind = plan::LaunchKind::row;
    l.group = 0;
    l.outputs = {p.g.outputs[0]};
    l.row_steps = {s};
    l.full = {5, 5};
    l.axes = {1};
    l.rows = 5;
    l.extent = 5;
    l.domain = plan::domain_of(l, p.g);
    std::vector<char> materialized(p.g.size(), 0);
    for (int leaf_node : p.g.leaves) materialized[size_t(leaf_node)] = 1;
    materialized[size_t(p.g.outputs[0])] = 1;
    const auto why = plan::launch_refusal(p.g, materialized, l);
    ASSERT_TRUE(why);
    EXPECT_THAT(*why, HasSubstr("is read at another row"));
    // Writing the sum alone (the split form) is legal.
    l.outputs = {s};
    materialized[size_t(s)] = 1;
    EXPECT_FALSE(plan::launch_refusal(p.g, materialized, l));
}

// Resolved, the refused group runs split with the oracle's bits, and the reason is in the plan
// dump and in the executable's record (what `kiln profile` prints).
TEST(FusionLegality, TheReasonReachesTheDumpAndTheProfile) {
    Tensor y = row_sums_transposed(leaf({5, 5}));
    const auto want = graph::evaluate({y.node()});
    plan::clear_plan_cache();
    const bool race = plan::options().race;
    plan::options().race = false;
    setenv("KILN_DUMP", "plan", 1);
    ::testing::internal::CaptureStderr();
    y.resolve();
    const std::string dump = ::testing::internal::GetCapturedStderr();
    unsetenv("KILN_DUMP");
    plan::options().race = race;
    EXPECT_EQ(y.to_host_bytes(), want[0].bytes());
    EXPECT_THAT(dump, HasSubstr("not fused in the plan chosen:\n  group 0 fused refused: node %"));
    EXPECT_THAT(dump, HasSubstr("is read at another row than the one its launch computes; "
                                "split instead (the group of %"));
    const auto& refused = plan::last_executable()->fusion_refusals;
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_THAT(refused[0], HasSubstr("is read at another row"));
}

// One RefusalMemo kept over every combination of forms of a graph with four groups (softmax,
// a transposed row sum read at another row, a long sum, a matmul with an epilogue) answers as
// the checks do alone: partitions with and without it agree on every refusal and launch.
TEST(FusionLegality, TheMemoAnswersAsTheChecksAloneOverEveryForm) {
    Tensor x = leaf({5, 5});
    Tensor a = leaf({2, 16400});
    const Proposal p = propose({softmax(x, -1) + row_sums_transposed(x), sum(a, {1}),
                                relu(matmul(x, leaf({5, 3})) + 1.0)});
    ASSERT_GE(p.groups.size(), 3u);
    plan::RefusalMemo memo(p.g);
    std::vector<plan::GroupForm> forms(p.groups.size(), plan::GroupForm::fused);
    int refused = 0, planned = 0;
    for (bool more = true; more;) {
        const plan::Partitioned alone = plan::partition(p.g, p.groups, forms);
        const plan::Partitioned memoized = plan::partition(p.g, p.groups, forms, {}, &memo);
        ASSERT_EQ(alone.refusal.has_value(), memoized.refusal.has_value());
        if (alone.refusal) {
            EXPECT_EQ(alone.refusal->group, memoized.refusal->group);
            EXPECT_EQ(alone.refusal->reason, memoized.refusal->reason);
            ++refused;
        } else {
            ASSERT_EQ(alone.plan.launches.size(), memoized.plan.launches.size());
            for (size_t i = 0; i < alone.plan.launches.size(); ++i)
                EXPECT_EQ(alone.plan.launches[i].outputs, memoized.plan.launches[i].outputs);
            ++planned;
        }
        // The next combination of forms (fused, split, segments for each group).
        more = false;
        for (auto& f : forms) {
            f = plan::GroupForm((int(f) + 1) % 3);
            if (f != plan::GroupForm::fused) {
                more = true;
                break;
            }
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(planned, 0);
}

// The memo tells one launch under two materializations apart: softmax's row launch over x plus
// its column sums reads them from a buffer when they are materialized (legal) and is refused when
// nothing writes them; asked in that order, the memo gives each answer the check gives.
TEST(FusionLegality, TheMemoKeepsALaunchsAnswerPerMaterializationOfWhatItReads) {
    Tensor x = leaf({6, 9});
    const Proposal p = propose({softmax(x + sum(x, {0}, true), -1)});
    std::vector<plan::GroupForm> forms(p.groups.size(), plan::GroupForm::fused);
    const plan::Plan planned = plan::partition_or_split(p.g, p.groups, forms);
    std::vector<char> materialized = plan::materialized_set(p.g, planned);
    const int column_sums = p.groups[0].folds[0];
    ASSERT_TRUE(materialized[size_t(column_sums)]);
    const plan::Launch& rows = planned.launches.back();
    ASSERT_EQ(rows.kind, plan::LaunchKind::row);
    plan::RefusalMemo memo(p.g);
    EXPECT_FALSE(memo.refusal(materialized, rows));
    materialized[size_t(column_sums)] = 0;
    const auto refused = plan::launch_refusal(p.g, materialized, rows);
    ASSERT_TRUE(refused);
    EXPECT_EQ(memo.refusal(materialized, rows), refused);
}

}  // namespace
}  // namespace kiln
