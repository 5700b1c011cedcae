// choose: a graph's plan by the cost model. Each fold group (a contraction with its epilogue and
// prologues is one) takes the form, fused, split or segments, whose plan the roofline estimates
// cheapest, each launch at its best point; then each generator (rand, randn, arange) is computed
// once into a buffer where that is cheaper than computing it in every launch that reads it.
#pragma once

#include <string>
#include <vector>

#include "plan/device_facts.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// Which nodes of g have buffers in `plan`: its leaves and what it materializes.
std::vector<char> materialized_set(const GraphView& g, const Plan& plan);

// The fusion decisions of one choose_plan: `lines`, each form tried with its estimate and each
// refusal met, in the order they were made (KILN_DUMP=plan); `refused`, the refusals met on the
// way to the plan chosen, each a form refused for one of its groups (the plan dump and
// `kiln profile`).
struct PlanDecisions {
    std::vector<std::string> lines;
    std::vector<std::string> refused;
};

// The plan of g whose estimated time on a device with these facts is least, over the forms of
// one fold group at a time from all fused (`fuse` false: every group split). With `decisions`,
// the decisions and their reasons.
Plan choose_plan(const GraphView& g, const DeviceFacts& facts, bool fuse,
                 PlanDecisions* decisions = nullptr);

}  // namespace kiln::plan
