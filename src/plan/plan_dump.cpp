// KILN_DUMP=plan's text (plan_dump.hpp).
#include "plan/plan_dump.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/env_list.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/roofline.hpp"

namespace kiln::plan {

bool plan_dump_enabled() {
    return env_list_has("KILN_DUMP", "plan");
}

namespace {

std::string node_line(const GraphView& g, int i) {
    const graph::Node& n = g.node(i);
    std::vector<std::string> in;
    for (int x : g.inputs[size_t(i)]) in.push_back(fmt::format("%{}", x));
    const bool leaf = g.is_leaf(i);
    return fmt::format("  %{} = {} {} {}{}{}\n", i, leaf ? "leaf" : graph::describe(n),
                       name(n.dtype), graph::to_string(n.shape),
                       in.empty() || leaf ? "" : fmt::format(" <- {}", fmt::join(in, " ")),
                       n.label.empty() ? "" : fmt::format("  ({})", n.label));
}

std::string launch_lines(const GraphView& g, const std::vector<char>& materialized, const Launch& l,
                         size_t index, const CompiledLaunch& run, const DeviceFacts& facts) {
    std::vector<std::string> outputs;
    for (int o : l.outputs) outputs.push_back(fmt::format("%{}", o));
    // A segments or contract_chunks launch writes its folds' (contraction's) partials.
    if (rules(l.kind).order.writes_partials)
        for (const auto& [n, scratch] : l.partials)
            outputs.push_back(fmt::format("scratch {} (partials of %{})", scratch, n));
    std::string text =
        fmt::format("launch {}: {}{} writes {}\n", index, name(l.kind),
                    l.label.empty() ? "" : " (" + l.label + ")", fmt::join(outputs, " "));
    for (const Schedule& s : l.domain) {
        const std::string point = to_string(l.kind, s);
        std::string marks;
        if (point == run.record.winner_by_model) marks += "  model's pick";
        for (const auto& [raced, ms] : run.record.race)
            if (raced == point) marks += fmt::format("  raced {:.4f} ms", ms);
        if (point == run.record.schedule) marks += "  CHOSEN";
        text += fmt::format("    {:<24} {:>10.3f} us est.{}\n", point,
                            estimate(g, materialized, l, s, facts).us, marks);
    }
    if (!run.record.not_raced.empty())
        text += fmt::format("    not raced: {}\n", run.record.not_raced);
    return text;
}

}  // namespace

std::string plan_dump(const GraphView& g, const std::vector<char>& materialized, const Plan& plan,
                      const PlanDecisions& decisions, const std::vector<CompiledLaunch>& run,
                      const DeviceFacts& facts, const std::string& device) {
    std::string text = fmt::format("kiln plan on {}: {} nodes, {} launches\ngraph:\n", device,
                                   g.size(), plan.launches.size());
    for (size_t i = 0; i < g.size(); ++i) text += node_line(g, int(i));
    if (!decisions.lines.empty()) text += "fusion:\n";
    for (const std::string& line : decisions.lines) text += "  " + line + "\n";
    if (!decisions.refused.empty()) text += "not fused in the plan chosen:\n";
    for (const std::string& line : decisions.refused) text += "  " + line + "\n";
    for (size_t i = 0; i < plan.launches.size() && i < run.size(); ++i)
        text += launch_lines(g, materialized, plan.launches[i], i, run[i], facts);
    return text;
}

}  // namespace kiln::plan
