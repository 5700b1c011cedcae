// lower_launch: a launch's kernel written by LaunchWriter (launch_writer.hpp) with its kind's
// body, grid and emptiness (src/plan/kinds/).
#include "plan/lower_launch.hpp"

#include <algorithm>

#include "kiln/error.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/launch_key.hpp"
#include "plan/launch_writer.hpp"

namespace kiln::plan {

bool is_empty(const Launch& l, const GraphView& g) {
    return rules(l.kind).empty(l, g);
}

int64_t grid_of(const Launch& l, const GraphView& g, const Schedule& s) {
    return rules(l.kind).grid(l, g, s);
}

LoweredLaunch lower_launch(const GraphView& g, const std::vector<char>& materialized,
                           const Launch& launch, const Schedule& s) {
    return LaunchWriter(g, materialized, launch, s).lower();
}

namespace {

// A launch's canonical form: its nodes numbered in the order a walk from its roots first meets
// them, each with its digest, whether it is materialized and whether the walk went through it,
// then its fields over those numbers. Launches with equal forms are written alike.
struct Canonical {
    std::vector<int64_t> key;
    std::vector<int> nodes;  // by canonical number
};

Canonical canonical(const GraphView& g, const std::vector<char>& materialized, const Launch& l,
                    const Schedule& s) {
    Canonical c;
    const std::vector<int> roots = launch_roots(l);
    // A root's inputs are walked even where it is materialized (a superset of what the writer
    // reads is as good a key).
    auto through = [&](int n) { return walks_through(materialized, l, roots, n); };
    std::map<int, int> number;
    for (int root : roots) {
        std::vector<int> stack{root};
        while (!stack.empty()) {
            const int n = stack.back();
            stack.pop_back();
            if (!number.try_emplace(n, int(c.nodes.size())).second) continue;
            c.nodes.push_back(n);
            if (!through(n)) continue;
            const auto& in = g.inputs[size_t(n)];
            for (auto it = in.rbegin(); it != in.rend(); ++it) stack.push_back(*it);
        }
    }
    auto& k = c.key;
    auto add = [&](const auto& values) {
        k.push_back(int64_t(values.size()));
        k.insert(k.end(), values.begin(), values.end());
    };
    auto add_nodes = [&](const std::vector<int>& nodes) {
        k.push_back(int64_t(nodes.size()));
        for (int n : nodes) k.push_back(number.at(n));
    };
    k.insert(k.end(), {int64_t(l.kind), l.rows, l.extent});
    add_schedule(k, s);
    add(l.label);
    add(l.full);
    add(l.axes);
    add_nodes(l.outputs);
    add_nodes(l.row_steps);
    k.push_back(l.contraction >= 0 ? number.at(l.contraction) : -1);
    k.push_back(l.scatter >= 0 ? number.at(l.scatter) : -1);
    k.push_back(int64_t(c.nodes.size()));
    for (int n : c.nodes) {
        k.push_back(int64_t(node_digest(g, n)));
        k.push_back((materialized[size_t(n)] ? 1 : 0) | (through(n) ? 2 : 0));
        if (through(n)) add_nodes(g.inputs[size_t(n)]);
    }
    return c;
}

}  // namespace

LoweredLaunch LoweringMemo::lower(const Launch& l, const Schedule& s) {
    // Scratch buffers are the plan's, numbered by it: such launches are written each time.
    if (!l.partials.empty()) return lower_launch(g_, materialized_, l, s);
    Canonical c = canonical(g_, materialized_, l, s);
    auto found = written_.find(c.key);
    if (found == written_.end()) {
        LoweredLaunch lowered = lower_launch(g_, materialized_, l, s);
        written_.emplace(std::move(c.key), Written{std::move(c.nodes), lowered});
        return lowered;
    }
    // The same kernel; its buffers and fault sites are this launch's nodes of the same numbers.
    const Written& w = found->second;
    auto rename = [&](int n) {
        const auto at = std::find(w.nodes.begin(), w.nodes.end(), n);
        if (at == w.nodes.end()) fail("internal: a written launch reads node %{} it never met", n);
        return c.nodes[size_t(at - w.nodes.begin())];
    };
    LoweredLaunch out = w.lowered;
    for (int& b : out.buffers)
        if (b >= 0) b = rename(b);
    for (size_t j = 0; j < out.scalars.size(); ++j)
        if (out.scalar_sites[j] >= 0) {
            out.scalar_sites[j] = rename(out.scalar_sites[j]);
            out.scalars[j] = Arg(int64_t{out.scalar_sites[j]} + 1);
        }
    return out;
}

}  // namespace kiln::plan
