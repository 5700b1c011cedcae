// view_graph: the topological order of a resolve's graph and its structural hash.
#include "plan/graph_view.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

namespace kiln::plan {
namespace {

// Feeds the bytes of plain values into one XXH3 state.
class Hasher {
  public:
    Hasher() { XXH3_64bits_reset(&state_); }
    template <typename T>
    void add(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        XXH3_64bits_update(&state_, &v, sizeof v);
    }
    template <typename T>
    void add(const std::vector<T>& v) {
        add(v.size());
        if (!v.empty()) XXH3_64bits_update(&state_, v.data(), v.size() * sizeof v[0]);
    }
    uint64_t digest() { return XXH3_64bits_digest(&state_); }

  private:
    XXH3_state_t state_;
};

void add_payload(Hasher& h, const graph::Node& n) {
    h.add(n.payload.index());
    std::visit(
        [&](const auto& p) {
            using P = std::decay_t<decltype(p)>;
            namespace op = graph::op;
            if constexpr (std::is_same_v<P, op::Constant>) {
                h.add(p.value);
            } else if constexpr (std::is_same_v<P, op::Generate>) {
                h.add(p.kind);
                h.add(p.start);
                h.add(p.step);
                h.add(p.seed);
            } else if constexpr (std::is_same_v<P, op::Map>) {
                h.add(p.op);
            } else if constexpr (std::is_same_v<P, op::Fold>) {
                h.add(p.kind);
                h.add(p.axes);
            } else if constexpr (std::is_same_v<P, op::View>) {
                h.add(p.kind);
                h.add(p.a);
                h.add(p.b);
                h.add(p.pad_value);
            } else if constexpr (std::is_same_v<P, op::Concat>) {
                h.add(p.axis);
            } else if constexpr (std::is_same_v<P, op::Gather>) {
                h.add(p.axis);
                h.add(p.select);
            } else if constexpr (std::is_same_v<P, op::ScatterAdd>) {
                h.add(p.axis);
            } else if constexpr (std::is_same_v<P, op::Conv1d>) {
                h.add(p.stride);
                h.add(p.padding);
                h.add(p.dilation);
                h.add(p.groups);
                h.add(static_cast<int>(p.arithmetic));
            } else if constexpr (std::is_same_v<P, op::Attention>) {
                h.add(p.causal);
                h.add(p.scale);
                h.add(static_cast<int>(p.arithmetic));
            } else if constexpr (std::is_same_v<P, op::Matmul>) {
                h.add(static_cast<int>(p.arithmetic));
            }  // Leaf: the op itself (the payload's index) is all there is
        },
        n.payload);
}

}  // namespace

uint64_t node_digest(const GraphView& g, int i) {
    const graph::Node& n = g.node(i);
    Hasher h;
    h.add(n.resolved());
    if (!n.resolved()) add_payload(h, n);
    h.add(n.dtype);
    h.add(n.shape);
    return h.digest();
}

GraphView view_graph(const std::vector<graph::NodeRef>& outputs) {
    GraphView g;
    std::unordered_map<const graph::Node*, int> position;
    // Iterative post-order: a node is placed after all of its inputs.
    struct Frame {
        graph::NodeRef node;
        size_t next = 0;
    };
    for (const auto& out : outputs) {
        if (position.count(out.get())) continue;
        std::vector<Frame> stack{{out}};
        while (!stack.empty()) {
            Frame& f = stack.back();
            const bool leaf = f.node->resolved();
            if (!leaf && f.next < f.node->inputs.size()) {
                const graph::NodeRef& in = f.node->inputs[f.next++];
                if (!position.count(in.get())) stack.push_back({in});
                continue;
            }
            const int at = static_cast<int>(g.nodes.size());
            position[f.node.get()] = at;
            g.nodes.push_back(f.node);
            std::vector<int> ins;
            if (!leaf)
                for (const auto& in : f.node->inputs) ins.push_back(position.at(in.get()));
            else
                g.leaves.push_back(at);
            g.inputs.push_back(std::move(ins));
            stack.pop_back();
        }
    }
    g.consumers.resize(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (int in : g.inputs[i]) g.consumers[static_cast<size_t>(in)].push_back(int(i));
    for (const auto& out : outputs) g.outputs.push_back(position.at(out.get()));
    for (const auto& n : g.nodes) g.most_elements = std::max(g.most_elements, n->numel());

    Hasher h;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const graph::Node& n = *g.nodes[i];
        h.add(n.resolved());
        if (!n.resolved()) add_payload(h, n);
        h.add(n.dtype);
        h.add(n.shape);
        h.add(g.inputs[i]);
    }
    h.add(g.outputs);
    g.hash = h.digest();
    return g;
}

std::string print(const GraphView& g) {
    std::string out;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const graph::Node& n = *g.nodes[i];
        out += fmt::format(
            "%{} = {} {} {}{}{}\n", i, n.resolved() ? "leaf" : graph::describe(n), name(n.dtype),
            graph::to_string(n.shape),
            g.inputs[i].empty() ? "" : fmt::format(" (%{})", fmt::join(g.inputs[i], ", %")),
            n.label.empty() ? "" : " [" + n.label + "]");
    }
    return out;
}

std::vector<int> reach(const GraphView& g, int start, const std::function<bool(int)>& stop) {
    // The planner calls this for every materialized node of every partition it tries: a visit
    // mark per node, cleared by bumping the walk's number rather than the marks.
    thread_local std::vector<uint32_t> mark;
    thread_local uint32_t walk = 0;
    if (mark.size() < g.size()) mark.resize(g.size(), 0);
    if (++walk == 0) {
        std::fill(mark.begin(), mark.end(), 0);
        walk = 1;
    }
    std::vector<int> seen;
    std::vector<int> work{start};
    while (!work.empty()) {
        const int n = work.back();
        work.pop_back();
        uint32_t& m = mark[static_cast<size_t>(n)];
        if (m == walk) continue;
        m = walk;
        seen.push_back(n);
        if (n != start && stop(n)) continue;
        for (int in : g.inputs[static_cast<size_t>(n)]) work.push_back(in);
    }
    std::sort(seen.begin(), seen.end());
    return seen;
}

std::vector<int> generators(const GraphView& g) {
    std::vector<int> out;
    for (size_t i = 0; i < g.size(); ++i)
        if (!g.is_leaf(int(i)) && g.node(int(i)).as<graph::op::Generate>() &&
            std::find(g.outputs.begin(), g.outputs.end(), int(i)) == g.outputs.end())
            out.push_back(int(i));
    return out;
}

}  // namespace kiln::plan
