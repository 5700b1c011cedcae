// Runtime sizes (docs/graph.md): a launch takes the extents that only bound its iteration as
// arguments, so the same graph at another batch size of one power-of-two range is the same
// kernels: only the first size compiles, every size gives the oracle's bits on every device, and
// a race decision serves the range.
#include <gtest/gtest.h>

#include "ir/hash.hpp"
#include "plan/choose.hpp"
#include "plan/graph_view.hpp"
#include "plan/lower_launch.hpp"
#include "plan/race.hpp"
#include "plan/sweep.hpp"
#include "support/graph_check.hpp"

namespace kiln {
namespace {

using test::identical;

// Host values in [-4, 4) as a tensor (uploaded: no launch of its own).
Tensor values(Device& d, const Shape& shape, int seed) {
    std::vector<float> v(static_cast<size_t>(graph::element_count(shape)));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(static_cast<int>((i * 37 + size_t(seed)) % 128) - 64) / 16;
    return Tensor::from_host(v, shape, d);
}

// layer_norm then softmax over rows of 96 (row launches: one fused, or one per fold split), a
// broadcast map of the same x (a map launch) and a linear layer with its epilogue (a contract
// launch), at `batch` rows.
std::vector<Tensor> block(Device& d, int64_t batch) {
    Tensor x = values(d, {batch, 96}, 7);
    Tensor w = values(d, {96}, 8);
    Tensor w2 = values(d, {24, 96}, 9);
    Tensor b2 = values(d, {24}, 10);
    return {softmax(layer_norm(x, 1, &w) * 2.0, -1), relu(x * w) + 1.0, gelu(linear(x, w2, &b2))};
}

// Every form of ts's graph (each launch at its domain's first point) and its resolve give the
// oracle's bits. Returns how many kernels the forms compiled (the resolve's own points may
// compile more).
uint64_t expect_oracle_bits(std::vector<Tensor> ts) {
    const auto nodes = test::nodes_of(ts);
    const auto want = graph::evaluate(nodes);
    const uint64_t before = compile_counters().memory_misses;
    const int forms = plan::sweep(
        nodes,
        [&](const plan::Member& m, const auto& got) {
            SCOPED_TRACE(m.fusion);
            for (size_t i = 0; i < got.size(); ++i)
                EXPECT_TRUE(identical({want[i].dtype, got[i]}, {want[i].dtype, want[i].bytes()}));
        },
        plan::SweepPoints::defaults);
    EXPECT_GE(forms, 1);
    const uint64_t compiled = compile_counters().memory_misses - before;
    resolve(ts);
    for (size_t i = 0; i < ts.size(); ++i)
        EXPECT_TRUE(
            identical({want[i].dtype, ts[i].to_host_bytes()}, {want[i].dtype, want[i].bytes()}));
    return compiled;
}

// Every form of the graph at the first batch size compiles its kernels; at the other sizes of
// its power-of-two range (33 to 64) the same forms compile nothing. A size of another range (65)
// has kernels of its own, and a batch of 1 is specialized (its unit axis drops out of the
// index arithmetic). Every size gives the oracle's bits, and so does the resolve (whose cost
// model may pick other points at another size: those compile). Every other point's kernel is
// shared too (OneBucketSharesKernelsAndRaces); the graph tests' sweeps check its bits.
TEST(GraphRuntimeSizes, OtherBatchSizesCompileNothing) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        expect_oracle_bits(block(*d, 33));
        for (int64_t batch : {64, 47, 50}) {
            SCOPED_TRACE(batch);
            EXPECT_EQ(expect_oracle_bits(block(*d, batch)), 0u);
        }
        for (int64_t batch : {65, 1}) expect_oracle_bits(block(*d, batch));
    }
}

// Each launch of block(batch) lowered at every point of its domain, under fixed facts.
std::vector<std::vector<plan::LoweredLaunch>> lowered_block(int64_t batch) {
    const std::vector<Tensor> ts = block(cpu_device(), batch);
    const plan::GraphView g = plan::view_graph(test::nodes_of(ts));
    const plan::Plan p = plan::choose_plan(g, test::kTwoCoreFacts, true);
    const auto materialized = plan::materialized_set(g, p);
    std::vector<std::vector<plan::LoweredLaunch>> out;
    for (const plan::Launch& l : p.launches) {
        out.emplace_back();
        for (const plan::Schedule& s : l.domain)
            out.back().push_back(plan::lower_launch(g, materialized, l, s));
    }
    return out;
}

// Batches 36 and 40 lower to the same kernels at every point (the same source), each bound to its
// own size, and share race keys: their runtime sizes (leading extents, m) lie in one
// power-of-two range. 65 lies in the next ranges: other kernels (their sizes bounded by the
// range's top) and other race keys.
TEST(GraphRuntimeSizes, OneBucketSharesKernelsAndRaces) {
    const auto a = lowered_block(36), b = lowered_block(40), c = lowered_block(65);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), c.size());
    size_t batched = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].size(), b[i].size());
        ASSERT_EQ(a[i].size(), c[i].size());
        // A launch that does not see the batch (the CPU's dense copy of a transposed weight) is
        // one kernel for every batch.
        if (ir::structural_hash(a[i][0].kernel) == ir::structural_hash(c[i][0].kernel) &&
            a[i][0].grid == c[i][0].grid)
            continue;
        ++batched;
        EXPECT_EQ(generate_source(Backend::opencl, std::span(&a[i][0].kernel, 1)),
                  generate_source(Backend::opencl, std::span(&b[i][0].kernel, 1)));
        for (size_t p = 0; p < a[i].size(); ++p) {
            SCOPED_TRACE(a[i][p].kernel.name + " point " + std::to_string(p));
            EXPECT_EQ(ir::structural_hash(a[i][p].kernel), ir::structural_hash(b[i][p].kernel));
            EXPECT_NE(ir::structural_hash(a[i][p].kernel), ir::structural_hash(c[i][p].kernel));
            EXPECT_EQ(plan::race_key(a[i][p]), plan::race_key(b[i][p]));
            EXPECT_NE(plan::race_key(a[i][p]), plan::race_key(c[i][p]));
            ASSERT_FALSE(a[i][p].scalars.empty());
            // The last runtime size: a map or row launch's leading extent, a linear's m.
            EXPECT_EQ(a[i][p].scalars.back().bits, 36u);
            EXPECT_EQ(b[i][p].scalars.back().bits, 40u);
            EXPECT_EQ(a[i][p].size_bucket, 64);
            EXPECT_EQ(c[i][p].size_bucket, 128);
        }
    }
    EXPECT_GE(batched, 2u);
}

// With racing, a size range's first resolve races (or finds its Tuner decision) and remembers
// its winner; another size of the range runs that winner alone, unraced, whatever points the cost
// model ranks first there. On the CPU (the mechanism is the backends' alike), for a map launch and
// a row launch of one fold (graphs with no fusion choice, which could differ between sizes).
TEST(GraphRuntimeSizes, ASizeRangeRacesOnce) {
    struct Racing {
        Racing() { plan::options().race = true; }
        ~Racing() { plan::options().race = false; }
    } racing;
    auto launches_at = [](int64_t batch) {
        Device& d = cpu_device();
        const Tensor x = values(d, {batch, 96}, 3);
        std::vector<Tensor> map{relu(x * values(d, {96}, 4)) + 1.0}, row{sum(x, {1})};
        expect_oracle_bits(map);
        auto launches = plan::last_executable()->launches;
        expect_oracle_bits(row);
        for (const auto& l : plan::last_executable()->launches) launches.push_back(l);
        return launches;
    };
    launches_at(36);
    const auto second = launches_at(40);
    EXPECT_EQ(second.size(), 2u);
    for (const plan::CompiledLaunch& l : second) {
        EXPECT_FALSE(l.record.raced) << l.record.name;
        EXPECT_EQ(l.record.not_raced, "its size range's raced winner") << l.record.name;
    }
}

}  // namespace
}  // namespace kiln
