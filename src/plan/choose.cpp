// choose: each fold group's form by the cost model (see choose.hpp).
#include "plan/choose.hpp"

#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "plan/fusion_legality.hpp"
#include "plan/launch_key.hpp"
#include "plan/partition.hpp"
#include "plan/roofline.hpp"

namespace kiln::plan {

namespace {

// Plans' estimated times, each launch at its best point. A launch's estimate is kept with
// everything it reads (launch_key.hpp): most launches of one try are the last try's.
class PlanCosts {
  public:
    PlanCosts(const GraphView& g, const DeviceFacts& f) : g_(g), f_(f) {}
    double cost(const Plan& plan) {
        const auto m = materialized_set(g_, plan);
        double us = 0;
        for (const auto& l : plan.launches) {
            auto [it, added] = launches_.try_emplace(launch_key(g_, m, l));
            if (added)
                it->second =
                    estimate(g_, m, l, l.domain.at(rank_points(g_, m, l, f_).front()), f_).us;
            us += it->second;
        }
        return us;
    }

  private:
    const GraphView& g_;
    const DeviceFacts& f_;
    std::map<std::vector<int64_t>, double> launches_;
};

// The generators `plan` computes where they are read (not in a buffer of their own).
std::vector<int> stored_candidates(const GraphView& g, const Plan& plan) {
    const auto materialized = materialized_set(g, plan);
    std::vector<int> out;
    for (int n : generators(g))
        if (!materialized[size_t(n)]) out.push_back(n);
    return out;
}

// choose_plan's tries, each partitioned and costed once: a try can ask for forms already tried
// (a contraction group's segments form is refused, and the group split gives a plan tried
// before; a generator stored or not).
class Tries {
  public:
    struct Tried {
        Partitioned partitioned;
        std::optional<double> cost;  // plan_cost, once asked for
    };

    Tries(const GraphView& g, const std::vector<FoldGroup>& groups, const DeviceFacts& f)
        : g_(g), groups_(groups), costs_(g, f), refusals_(g) {}

    Tried& partition(const std::vector<GroupForm>& forms, const std::vector<int>& stored) {
        auto [it, added] = done_.try_emplace({forms, stored});
        if (added) it->second.partitioned = plan::partition(g_, groups_, forms, stored, &refusals_);
        return it->second;
    }
    double cost(Tried& t) {
        if (!t.cost) t.cost = costs_.cost(t.partitioned.plan);
        return *t.cost;
    }

  private:
    const GraphView& g_;
    const std::vector<FoldGroup>& groups_;
    PlanCosts costs_;
    RefusalMemo refusals_;
    std::map<std::pair<std::vector<GroupForm>, std::vector<int>>, Tried> done_;
};

}  // namespace

std::vector<char> materialized_set(const GraphView& g, const Plan& plan) {
    std::vector<char> m(g.size(), 0);
    for (int l : g.leaves) m[size_t(l)] = 1;
    for (int n : plan.materialized) m[size_t(n)] = 1;
    return m;
}

Plan choose_plan(const GraphView& g, const DeviceFacts& f, bool fuse, PlanDecisions* decisions) {
    const auto groups = fold_groups(g);
    Tries tries(g, groups, f);
    // partition_or_split, noting each refusal: the try planned, and the refusals that split its
    // groups.
    auto plan_of = [&](std::vector<GroupForm>& forms, const std::vector<int>& stored,
                       std::vector<std::string>& refused) -> Tries::Tried& {
        for (;;) {
            Tries::Tried& t = tries.partition(forms, stored);
            const std::optional<FusionRefusal>& r = t.partitioned.refusal;
            if (!r) return t;
            refused.push_back(describe(*r, groups.at(size_t(r->group))));
            if (decisions) decisions->lines.push_back(refused.back());
            forms.at(static_cast<size_t>(r->group)) = GroupForm::split;
        }
    };
    std::vector<GroupForm> forms(groups.size(), fuse ? GroupForm::fused : GroupForm::split);
    std::vector<std::string> best_refused;
    Tries::Tried& first = plan_of(forms, {}, best_refused);
    Plan best = first.partitioned.plan;
    double best_cost = tries.cost(first);
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
            Tries::Tried& t = plan_of(tried, {}, refused);
            const double cost = tries.cost(t);
            note(fmt::format("group {} {}", i, name(alt)), cost, cost < best_cost);
            if (cost < best_cost) {
                best = t.partitioned.plan;
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
        Tries::Tried& t = plan_of(tried_forms, tried, refused);
        const double cost = tries.cost(t);
        note(fmt::format("node %{} ({}) stored", n, graph::describe(g.node(n))), cost,
             cost < best_cost);
        if (cost < best_cost) {
            best = t.partitioned.plan;
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
