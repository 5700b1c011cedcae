// Graph tests, written once and run on every device: a graph built by a function of the device
// is resolved (and optionally swept through every plan member) and compared bitwise with the
// graph oracle (NaNs of a float dtype compare equal).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <vector>

#include "everywhere.hpp"
#include "graph/oracle.hpp"
#include "kiln/tensor.hpp"
#include "plan/choose.hpp"
#include "plan/device_facts.hpp"
#include "plan/graph_view.hpp"
#include "plan/partition.hpp"
#include "plan/resolve.hpp"
#include "plan/sweep.hpp"

namespace kiln::test {

// Graph tests rank schedules by the cost model alone unless they test racing (which compiles and
// times several points of every launch); plan::sweep runs every point anyway.
class NoRacing : public ::testing::Environment {
  public:
    void SetUp() override { plan::options().race = false; }
};
inline ::testing::Environment* const kNoRacing = ::testing::AddGlobalTestEnvironment(new NoRacing);

using GraphBuilder = std::function<std::vector<Tensor>(Device&)>;

// The kinds of the last resolve's launches, in order.
inline std::vector<plan::LaunchKind> launch_kinds() {
    std::vector<plan::LaunchKind> kinds;
    for (const auto& l : plan::last_executable()->launches) kinds.push_back(l.kind);
    return kinds;
}

// y's graph is one contraction group whose fused form is a single launch of `kind` writing y
// (its epilogue in the store); resolved, y has the oracle's bits.
inline void expect_one_fused_launch(Tensor y, plan::LaunchKind kind) {
    const plan::GraphView g = plan::view_graph({y.node()});
    const auto groups = plan::fold_groups(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_TRUE(groups[0].contraction);
    const plan::Plan fused = plan::partition(g, groups, {plan::GroupForm::fused}).plan;
    ASSERT_EQ(fused.launches.size(), 1u);
    EXPECT_EQ(fused.launches[0].kind, kind);
    EXPECT_EQ(fused.launches[0].outputs, std::vector{g.outputs[0]});
    const auto want = graph::evaluate({y.node()});
    y.resolve();
    EXPECT_EQ(y.to_host_bytes(), want[0].bytes());
}

inline std::vector<graph::NodeRef> nodes_of(const std::vector<Tensor>& ts) {
    std::vector<graph::NodeRef> out;
    for (const auto& t : ts) out.push_back(t.node());
    return out;
}

// Fixed facts for tests of the planner's choices: a device's own facts are measured, and a test
// that runs beside others on a loaded machine would see them move.
inline const plan::DeviceFacts kH200LikeFacts{4.0e6, 2.5, 6.0e7, true, 132};
inline const plan::DeviceFacts kTwoCoreFacts{2.0e4, 5.0, 1.0e5, false, 2};

// Gives the CPU's and PoCL's facts (KILN_DEVICE_FACTS) to a test binary whose tests check the
// plans real resolves make there: a 2-core AVX-512 machine's, measured idle. Called before
// any resolve (at static initialization); a KILN_DEVICE_FACTS already set is left as it is.
inline int give_cpu_facts() {
    return ::setenv("KILN_DEVICE_FACTS",
                    "cpu:bandwidth=3.5e4,launch_us=0.2,flops=2.2e5,units=2;"
                    "opencl:bandwidth=1.8e4,launch_us=0.45,flops=1.6e4,units=2",
                    0);
}

// The kinds of the launches the planner chooses for ts's graph under `facts`, fusion on.
inline std::vector<plan::LaunchKind> planned_kinds(const std::vector<Tensor>& ts,
                                                   const plan::DeviceFacts& facts) {
    std::vector<plan::LaunchKind> kinds;
    for (const auto& l : plan::choose_plan(plan::view_graph(nodes_of(ts)), facts, true).launches)
        kinds.push_back(l.kind);
    return kinds;
}

// Resolves build(d)'s tensors on every device and compares them with the oracle; with `sweep`,
// every plan member too.
inline void expect_graph_everywhere(const GraphBuilder& build, bool sweep = false) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        std::vector<Tensor> ts = build(*d);
        const auto want = graph::evaluate(nodes_of(ts));
        if (sweep) {
            const int members = plan::sweep(
                nodes_of(ts),
                [&](const plan::Member& m, const std::vector<std::vector<uint8_t>>& got) {
                    SCOPED_TRACE(m.fusion + " " + m.launch + " " + m.schedule);
                    for (size_t i = 0; i < got.size(); ++i)
                        EXPECT_TRUE(
                            identical({want[i].dtype, got[i]}, {want[i].dtype, want[i].bytes()}))
                            << "output " << i;
                });
            EXPECT_GT(members, 1);
        }
        resolve(ts);
        for (size_t i = 0; i < ts.size(); ++i)
            EXPECT_TRUE(
                identical({want[i].dtype, ts[i].to_host_bytes()}, {want[i].dtype, want[i].bytes()}))
                << "output " << i << " " << graph::to_string(ts[i].shape());
    }
}

// Host data with kiln's edge values mixed in, as a tensor on `d`.
// A tensor-core class through the graph: where the device has tensor cores (`tensor_cores`),
// every plan member gives the same bits, the resolve too, and each launch of `kind` runs a
// tensor-core point; returns those bits, one per output. Elsewhere the resolve gives the graph
// oracle's bits (the class runs the exact class there) and the result is empty.
inline std::vector<std::vector<uint8_t>> expect_class_in_every_member(
    const std::vector<Tensor>& outs, plan::LaunchKind kind, bool tensor_cores) {
    const std::vector<graph::NodeRef> nodes = nodes_of(outs);
    std::vector<std::vector<uint8_t>> first;
    if (tensor_cores) {
        const int members = plan::sweep(nodes, [&](const plan::Member& mb, const auto& got) {
            SCOPED_TRACE(mb.fusion + " " + mb.launch + " " + mb.schedule);
            if (first.empty()) first = got;
            for (size_t i = 0; i < got.size(); ++i)
                EXPECT_TRUE(identical({outs[i].dtype(), got[i]}, {outs[i].dtype(), first[i]}));
        });
        EXPECT_GT(members, 1);
    }
    std::vector<Tensor> resolved = outs;
    resolve(resolved);
    for (const auto& launch : plan::last_executable()->launches) {
        if (launch.kind != kind) continue;
        EXPECT_EQ(launch.record.schedule.rfind("tc", 0) == 0, tensor_cores)
            << launch.record.schedule;
    }
    if (!tensor_cores) {
        const auto want = graph::evaluate(nodes);
        for (size_t i = 0; i < resolved.size(); ++i)
            EXPECT_EQ(resolved[i].to_host_bytes(), want[i].bytes()) << "output " << i;
        return {};
    }
    for (size_t i = 0; i < resolved.size(); ++i)
        EXPECT_EQ(resolved[i].to_host_bytes(), first[i]) << "output " << i;  // a member too
    return first;
}

inline Tensor random_tensor(Device& d, DType t, const Shape& shape, uint64_t seed) {
    const HostBuffer h = random_buffer(t, static_cast<size_t>(graph::element_count(shape)), seed);
    return Tensor::from_bytes(h.bytes.data(), h.count(), t, shape, d);
}

// Finite values in [-range, range) of a float dtype (no edge values), as a tensor on `d`.
inline Tensor finite_tensor(Device& d, DType t, const Shape& shape, uint64_t seed,
                            float range = 4) {
    return Tensor::rand(shape, seed, t, d) * (2.0 * range) - static_cast<double>(range);
}

}  // namespace kiln::test
