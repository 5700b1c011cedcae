// The graph a resolve works on: every node the requested outputs need that is not resolved yet,
// plus the resolved nodes they read (leaves), in one deterministic topological order. Plans
// refer to nodes by their position in this order, so one plan serves every graph of the same
// structure (same ops, dtypes and shapes), whatever buffers its leaves hold.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "graph/node.hpp"

namespace kiln::plan {

struct GraphView {
    std::vector<graph::NodeRef> nodes;        // inputs before their consumers
    std::vector<std::vector<int>> inputs;     // per node: positions of its inputs
    std::vector<std::vector<int>> consumers;  // per node: positions of its consumers
    std::vector<int> outputs;                 // the requested nodes' positions
    std::vector<int> leaves;                  // resolved nodes, in order
    uint64_t hash = 0;                        // structure, dtypes, shapes, constants
    int64_t most_elements = 0;                // the largest element count of any node

    const graph::Node& node(int i) const { return *nodes[static_cast<size_t>(i)]; }
    size_t size() const { return nodes.size(); }
    bool is_leaf(int i) const { return node(i).resolved(); }
};

// The graph behind `outputs` (duplicates allowed; resolved outputs are leaves).
GraphView view_graph(const std::vector<graph::NodeRef>& outputs);

// A digest of node i alone: its op and the op's parameters, dtype, shape and whether it is a leaf
// (the parts of view_graph's hash that are the node's own).
uint64_t node_digest(const GraphView& g, int i);

// A readable listing of the graph, one node per line (for dumps and errors).
std::string print(const GraphView& g);

// Nodes reachable from `start` (included) through its inputs, stopping at (and including) nodes
// other than start that `stop` says are boundaries; ascending, each once. `stop` must not call
// reach itself (the walk's marks are the calling thread's).
std::vector<int> reach(const GraphView& g, int start, const std::function<bool(int)>& stop);

// The graph's generators (rand, randn, arange) that are not outputs: a plan computes each where
// it is read or, stored, once into a buffer (partition.hpp's `stored`).
std::vector<int> generators(const GraphView& g);

}  // namespace kiln::plan
