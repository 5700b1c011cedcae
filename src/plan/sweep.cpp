// sweep: every fusion choice and schedule point of a graph's plan, run and checked.
#include "plan/sweep.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "kiln/error.hpp"
#include "plan/executable.hpp"
#include "plan/graph_view.hpp"
#include "plan/lower_launch.hpp"
#include "plan/partition.hpp"

namespace kiln::plan {

namespace {

constexpr GroupForm kForms[] = {GroupForm::fused, GroupForm::split, GroupForm::segments};

// Every combination of group forms when there are few groups; otherwise every group in each
// form at once.
std::vector<std::vector<GroupForm>> form_choices(size_t groups) {
    std::vector<std::vector<GroupForm>> out;
    if (groups <= 2) {
        size_t combos = 1;
        for (size_t i = 0; i < groups; ++i) combos *= 3;
        for (size_t c = 0; c < combos; ++c) {
            std::vector<GroupForm> f(groups);
            size_t code = c;
            for (size_t i = 0; i < groups; ++i, code /= 3) f[i] = kForms[code % 3];
            out.push_back(f);
        }
    } else {
        for (GroupForm form : kForms) out.push_back(std::vector<GroupForm>(groups, form));
    }
    return out;
}

std::string describe_forms(const std::vector<GroupForm>& forms) {
    if (forms.empty()) return "no folds";
    std::vector<std::string> parts;
    for (GroupForm f : forms) parts.push_back(name(f));
    return fmt::format("{}", fmt::join(parts, ","));
}

// The plans of every distinct form choice, with the generators inlined and (where there are
// any) stored, with the materialized set of each.
struct Planned {
    std::string fusion;
    Plan plan;
    std::vector<char> materialized;
};

std::vector<Planned> every_plan(const GraphView& g) {
    const auto groups = fold_groups(g);
    const std::vector<int> stored = generators(g);
    std::vector<Planned> out;
    std::vector<std::vector<GroupForm>> planned;
    for (auto forms : form_choices(groups.size())) {
        Plan plan = partition_or_split(g, groups, forms);
        if (std::find(planned.begin(), planned.end(), forms) != planned.end()) continue;
        planned.push_back(forms);
        for (bool store : {false, true}) {
            if (store && stored.empty()) continue;
            std::vector<GroupForm> stored_forms = forms;
            Plan p = store ? partition_or_split(g, groups, stored_forms, nullptr, stored) : plan;
            std::vector<char> materialized(g.size(), 0);
            for (int l : g.leaves) materialized[size_t(l)] = 1;
            for (int n : p.materialized) materialized[size_t(n)] = 1;
            out.push_back({describe_forms(forms) + (store ? " generators stored" : ""),
                           std::move(p), std::move(materialized)});
        }
    }
    return out;
}

}  // namespace

std::vector<ir::Kernel> member_kernels(const std::vector<graph::NodeRef>& outputs) {
    const GraphView g = view_graph(outputs);
    std::vector<ir::Kernel> kernels;
    for (const auto& p : every_plan(g))
        for (const auto& l : p.plan.launches)
            for (const auto& s : l.domain)
                kernels.push_back(lower_launch(g, p.materialized, l, s).kernel);
    return kernels;
}

int sweep(const std::vector<graph::NodeRef>& outputs,
          const std::function<void(const Member&, const std::vector<std::vector<uint8_t>>&)>& check,
          SweepPoints points) {
    const GraphView g = view_graph(outputs);
    Device& device = *outputs.at(0)->device;
    int members = 0;
    for (const auto& [fusion, plan, materialized] : every_plan(g)) {
        // Every launch at every point it runs at, compiled in one unit.
        std::vector<std::vector<LoweredLaunch>> lowered(plan.launches.size());
        std::vector<ir::Kernel> kernels;
        for (size_t li = 0; li < plan.launches.size(); ++li) {
            const auto& domain = plan.launches[li].domain;
            const size_t count = points == SweepPoints::every ? domain.size() : 1;
            for (size_t p = 0; p < count; ++p) {
                lowered[li].push_back(lower_launch(g, materialized, plan.launches[li], domain[p]));
                kernels.push_back(lowered[li].back().kernel);
            }
        }
        const auto compiled = compile_all(device, kernels);

        Executable e;
        e.device = &device;
        e.nodes = g.size();
        e.faults = plan.has_faults;
        e.allocate = plan.materialized;
        e.scratch = plan.scratch;
        auto launch_at = [&](size_t li, size_t point) {
            size_t k = 0;
            for (size_t i = 0; i < li; ++i) k += lowered[i].size();
            CompiledLaunch cl;
            cl.kind = plan.launches[li].kind;
            cl.kernel = compiled[k + point];
            cl.grid = lowered[li][point].grid;
            cl.buffers = lowered[li][point].buffers;
            cl.scalars = lowered[li][point].scalars;
            cl.empty = is_empty(plan.launches[li], g);
            return cl;
        };
        auto run = [&](const Member& m, size_t varied, size_t point) {
            RunBuffers buffers = begin_run(e, g);
            const uint8_t poison = 0xA5;
            for (int n : e.allocate)
                if (buffers.nodes[size_t(n)]->bytes())
                    device.fill(buffers.nodes[size_t(n)]->memory(), &poison, 1);
            for (size_t li = 0; li < plan.launches.size(); ++li)
                launch(launch_at(li, li == varied ? point : 0), buffers);
            check_faults(g, buffers);
            std::vector<std::vector<uint8_t>> out;
            for (int o : g.outputs) {
                const Buffer& b = *buffers.nodes[size_t(o)];
                out.push_back(b.count() ? b.download_bytes() : std::vector<uint8_t>{});
            }
            check(m, out);
            ++members;
        };
        run({fusion, "", "default"}, SIZE_MAX, 0);
        for (size_t li = 0; li < plan.launches.size(); ++li) {
            const Launch& l = plan.launches[li];
            for (size_t p = 1; p < lowered[li].size(); ++p)
                run({fusion, fmt::format("#{} {}", li, lowered[li][p].kernel.name),
                     to_string(l.kind, l.domain[p])},
                    li, p);
        }
    }
    return members;
}

}  // namespace kiln::plan
