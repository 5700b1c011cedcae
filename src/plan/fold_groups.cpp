// fold_groups: which folds share a launch (same reduced shape and axes, related inputs, no
// cycle), each contraction a group of its own; and what a node's value needs of them.
#include <map>
#include <optional>
#include <set>

#include "plan/contract.hpp"
#include "plan/partition.hpp"

namespace kiln::plan {

namespace op = graph::op;

bool inlineable(const graph::Node& n) {
    return !n.resolved() && (n.as<op::Map>() || n.as<op::View>() || n.as<op::Concat>() ||
                             n.as<op::Constant>() || n.as<op::Generate>());
}

namespace {

bool is_fold(const GraphView& g, int i) {
    return !g.is_leaf(i) && g.node(i).as<op::Fold>() != nullptr;
}

bool is_contraction(const GraphView& g, int i) {
    return plan::is_contraction(g.node(i));
}

// Whether two sets share an element (one pass over both, in order).
bool intersect(const std::set<int>& a, const std::set<int>& b) {
    for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
        if (*i == *j) return true;
        if (*i < *j)
            ++i;
        else
            ++j;
    }
    return false;
}

}  // namespace

bool is_grouped(const GraphView& g, int i) {
    return is_fold(g, i) || is_contraction(g, i);
}

std::vector<int> folds_needed(const GraphView& g, int n, const std::vector<char>& materialized) {
    std::vector<int> out;
    for (int r : reach(g, n, [&](int i) { return materialized[size_t(i)] || is_grouped(g, i); }))
        if ((r != n && is_grouped(g, r) && !materialized[size_t(r)]) ||
            (r == n && is_grouped(g, n)))
            out.push_back(r);
    return out;
}

std::vector<FoldGroup> fold_groups(const GraphView& g) {
    std::vector<FoldGroup> groups;
    std::vector<std::set<int>> group_sources;  // per group: what its folds read, together
    std::map<int, size_t> group_of;
    // What each fold reads, through inlined nodes (folds and non-inlined nodes are boundaries).
    // (A contraction reads both of its operands.)
    std::map<int, std::set<int>> sources_of;
    auto sources = [&](int f) -> const std::set<int>& {
        auto [it, fresh] = sources_of.try_emplace(f);
        if (fresh)
            for (int in : g.inputs[static_cast<size_t>(f)]) {
                {
                    const std::vector<int> r =
                        reach(g, in, [&](int i) { return !inlineable(g.node(i)); });
                    it->second.insert(r.begin(), r.end());
                }
                if (!is_contraction(g, f)) break;
            }
        return it->second;
    };
    // The groups a group's folds read results of (directly, through inlined nodes); kept until
    // a fold joins the group (what its folds read was grouped before them).
    std::vector<std::optional<std::set<size_t>>> deps_of;
    auto group_deps = [&](size_t gi) -> const std::set<size_t>& {
        std::optional<std::set<size_t>>& deps = deps_of[gi];
        if (deps) return *deps;
        deps.emplace();
        for (int f : groups[gi].folds)
            for (int s : sources(f))
                if (is_grouped(g, s) && group_of.count(s)) deps->insert(group_of.at(s));
        deps->erase(gi);
        return *deps;
    };
    // Whether group a reads group b's results, directly or through other groups: a search that
    // visits each group once (graphs with residual paths have exponentially many paths).
    auto depends = [&](size_t a, size_t b) {
        std::vector<char> seen(groups.size(), 0);
        std::vector<size_t> work{a};
        while (!work.empty()) {
            const size_t x = work.back();
            work.pop_back();
            if (x == b) return true;
            if (seen[x]) continue;
            seen[x] = 1;
            for (size_t d : group_deps(x)) work.push_back(d);
        }
        return false;
    };
    for (size_t i = 0; i < g.size(); ++i) {
        const int f = static_cast<int>(i);
        if (is_contraction(g, f)) {
            groups.push_back({{f}, g.node(f).shape, {}, true});
            group_sources.resize(groups.size());  // never joined
            deps_of.resize(groups.size());
            group_of[f] = groups.size() - 1;
            continue;
        }
        if (!is_fold(g, f)) continue;
        const graph::Node& node = g.node(f);
        const auto& axes = node.as<op::Fold>()->axes;
        const graph::Shape& full = g.node(g.inputs[i][0]).shape;
        const std::set<int> mine = sources(f);
        std::optional<size_t> chosen;
        for (size_t gi = 0; gi < groups.size() && !chosen; ++gi) {
            if (groups[gi].contraction || groups[gi].full != full || groups[gi].axes != axes)
                continue;
            bool related = false;
            for (int other : groups[gi].folds) related = related || mine.count(other);
            if (!related && !intersect(mine, group_sources[gi])) continue;
            // Joining must not make a cycle: f may not read a group that reads this one.
            bool cycle = false;
            for (int s : mine)
                if (is_grouped(g, s) && group_of.count(s) && group_of.at(s) != gi &&
                    depends(group_of.at(s), gi))
                    cycle = true;
            if (!cycle) chosen = gi;
        }
        if (!chosen) {
            groups.push_back({{}, full, axes});
            group_sources.resize(groups.size());
            deps_of.resize(groups.size());
            chosen = groups.size() - 1;
        }
        groups[*chosen].folds.push_back(f);
        deps_of[*chosen].reset();
        group_sources[*chosen].insert(mine.begin(), mine.end());
        group_of[f] = *chosen;
    }
    return groups;
}

}  // namespace kiln::plan
