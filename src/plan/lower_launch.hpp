// lower_launch: one launch of a plan at one schedule point, as a DSL kernel. Every node the
// launch does not read from a buffer is inlined at the index where it is needed: maps apply their
// op, views map the index to their input's, constants and generators compute from the index;
// a row launch computes its folds (and the row-space maps between them) once per row.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/ir.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

struct LoweredLaunch {
    ir::Kernel kernel;
    int64_t grid = 0;
    // What each parameter binds to, in parameter order: a node's buffer (>= 0), the plan's
    // fault record (kFaultBuffer), its scratch buffer k (scratch_binding(k)), or the scalar
    // scalars[j] (scalar_binding(j)).
    std::vector<int> buffers;
    // The scalar arguments, each of its parameter's dtype: a fault site's node + 1 (i64, what a
    // kernel writes to the fault record where that node meets a bad index) and the runtime sizes
    // (the index type: the extents that only bound the iteration, launch_writer.hpp). Arguments,
    // so that launches of one structure are one kernel whatever their place in the graph and
    // their number of rows.
    std::vector<Arg> scalars;
    // The power of two at or above the largest runtime size (0: the kernel has none): the range
    // of sizes its race decision serves (race.hpp).
    int64_t size_bucket = 0;
    // Per scalar: the node whose fault site it is, or -1 for a runtime size.
    std::vector<int> scalar_sites;
};
inline constexpr int kFaultBuffer = -1;
inline constexpr int scratch_binding(int k) {
    return -2 - k;
}
inline constexpr int kScalarBase = -(1 << 20);
inline constexpr int scalar_binding(int j) {
    return kScalarBase - j;
}

// The fault record gather and scatter launches write when an index is out of range: element 0 is
// 1 + the node's position in the graph, element 1 the element's linear index, element 2 the
// index value (0 everywhere while nothing is wrong).
inline constexpr int kFaultWords = 3;

// `materialized[i]`: node i is read from a buffer (a leaf, or written by a launch of the plan).
LoweredLaunch lower_launch(const GraphView& g, const std::vector<char>& materialized,
                           const Launch& launch, const Schedule& s);

// lower_launch for the launches of one plan. A launch that is another's up to the positions of its
// nodes (the same kind, fields, label and schedule point over nodes of the same ops, dtypes and
// shapes, materialized alike: the six layers of a transformer) is written once; the copy's
// buffers and fault sites are renamed to its own nodes. The writer reads nothing else (the nodes
// it can reach from the launch's outputs, steps and contraction through the nodes it computes).
class LoweringMemo {
  public:
    LoweringMemo(const GraphView& g, const std::vector<char>& materialized)
        : g_(g), materialized_(materialized) {}
    LoweredLaunch lower(const Launch& launch, const Schedule& s);

  private:
    struct Written {
        std::vector<int> nodes;  // the launch's nodes by their canonical number
        LoweredLaunch lowered;
    };
    const GraphView& g_;
    const std::vector<char>& materialized_;
    std::map<std::vector<int64_t>, Written> written_;
};

// Whether a launch has nothing to compute (zero elements, rows or sources).
bool is_empty(const Launch& launch, const GraphView& g);

// The blocks of a launch at a schedule.
int64_t grid_of(const Launch& launch, const GraphView& g, const Schedule& s);

}  // namespace kiln::plan
