// KILN_DUMP=plan: each resolve that plans prints, on standard error, its graph, each fold group's
// forms with the cost model's estimate of each (and why a form was refused), the refusals behind
// the plan chosen, and each launch with every point of its domain, the model's estimate there,
// the model's pick, the points raced and the one chosen (docs/graph.md). KILN_DUMP is a
// comma-separated list; `plan` is its only word today (generated sources have their own switch,
// KILN_DUMP_SOURCE).
#pragma once

#include <string>
#include <vector>

#include "plan/choose.hpp"
#include "plan/device_facts.hpp"
#include "plan/executable.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// Whether KILN_DUMP names `plan` (read at each call, so a test can set it).
bool plan_dump_enabled();

// The dump of one planned resolve: the graph, the decisions, the launches as planned and run.
std::string plan_dump(const GraphView& g, const std::vector<char>& materialized, const Plan& plan,
                      const PlanDecisions& decisions, const std::vector<CompiledLaunch>& run,
                      const DeviceFacts& facts, const std::string& device);

}  // namespace kiln::plan
