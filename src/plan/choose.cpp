// choose: each fold group's form by the cost model (see choose.hpp).
#include "plan/choose.hpp"

#include <fmt/format.h>

#include "plan/fusion_legality.hpp"
#include "plan/partition.hpp"
#include "plan/roofline.hpp"

namespace kiln::plan {

namespace {

// A plan's estimated time, each launch at its best point.
double plan_cost(const GraphView& g, const Plan& plan, const DeviceFacts& f) {
    const auto m = materialized_set(g, plan);
    double us = 0;
    for (const auto& l : plan.launches)
        us += estimate(g, m, l, l.domain.at(rank_points(g, m, l, f).front()), f).us;
    return us;
}

// The generators `plan` computes where they are read (not in a buffer of their own).
std::vector<int> stored_candidates(const GraphView& g, const Plan& plan) {
    const auto materialized = materialized_set(g, plan);
    std::vector<int> out;
    for (int n : generators(g))
        if (!materialized[size_t(n)]) out.push_back(n);
    return out;
}

}  // namespace

std::vector<char> materialized_set(const GraphView& g, const Plan& plan) {
    std::vector<char> m(g.size(), 0);
    for (int l : g.leaves) m[size_t(l)] = 1;
    for (int n : plan.materialized) m[size_t(n)] = 1;
    return m;
}

Plan choose_plan(const GraphView& g, const DeviceFacts& f, bool fuse, PlanDecisions* decisions) {
    const auto groups = fold_groups(g);
    // partition_or_split, noting each refusal: the plan, and the refusals that split its groups.
    auto plan_of = [&](std::vector<GroupForm>& forms, const std::vector<int>& stored,
                       std::vector<std::string>& refused) {
        std::vector<FusionRefusal> refusals;
        Plan p = partition_or_split(g, groups, forms, &refusals, stored);
        for (const FusionRefusal& r : refusals) {
            refused.push_back(describe(r, groups.at(size_t(r.group))));
            if (decisions) decisions->lines.push_back(refused.back());
        }
        return p;
    };
    std::vector<GroupForm> forms(groups.size(), fuse ? GroupForm::fused : GroupForm::split);
    std::vector<std::string> best_refused;
    Plan best = plan_of(forms, {}, best_refused);
    double best_cost = plan_cost(g, best, f);
    auto note = [&](const std::string& what, double cost, bool kept) {
        if (decisions)
            decisions->lines.push_back(
                fmt::format("{}: {:.3f} us est.{}", what, cost, kept ? "  kept" : ""));
    };
    note(fmt::format("every group {}", fuse ? "fused where it can be" : "split"), best_cost, true);
    for (size_t i = 0; i < groups.size(); ++i) {
        for (GroupForm alt : {GroupForm::split, GroupForm::segments}) {
            if (forms[i] == alt || (alt != GroupForm::split && !fuse)) continue;
            std::vector<GroupForm> tried = forms;
            tried[i] = alt;
            std::vector<std::string> refused;
            Plan p = plan_of(tried, {}, refused);
            const double cost = plan_cost(g, p, f);
            note(fmt::format("group {} {}", i, name(alt)), cost, cost < best_cost);
            if (cost < best_cost) {
                best = std::move(p);
                best_cost = cost;
                forms = tried;
                best_refused.insert(best_refused.end(), refused.begin(), refused.end());
            }
        }
    }
    // A generator is computed wherever it is read; one that several launches (or several passes
    // of one) read is computed once into a buffer instead where that costs less.
    std::vector<int> stored;
    for (int n : stored_candidates(g, best)) {
        std::vector<int> tried = stored;
        tried.push_back(n);
        std::vector<GroupForm> tried_forms = forms;
        std::vector<std::string> refused;
        Plan p = plan_of(tried_forms, tried, refused);
        const double cost = plan_cost(g, p, f);
        note(fmt::format("node %{} ({}) stored", n, graph::describe(g.node(n))), cost,
             cost < best_cost);
        if (cost < best_cost) {
            best = std::move(p);
            best_cost = cost;
            forms = tried_forms;
            stored = std::move(tried);
            best_refused.insert(best_refused.end(), refused.begin(), refused.end());
        }
    }
    if (decisions) decisions->refused = std::move(best_refused);
    return best;
}

}  // namespace kiln::plan
