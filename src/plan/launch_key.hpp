// launch_key: what the planner's per-launch passes read of a proposed launch, as one value, so
// that their answers can be kept between the partitions of one graph that choose_plan tries.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// The nodes a launch's passes start from: its outputs, steps, contraction and scatter.
std::vector<int> launch_roots(const Launch& launch);

// Whether those passes go on to node n's inputs (n is computed in the launch, or is one of its
// outputs or `roots`) rather than reading n's buffer.
bool walks_through(const std::vector<char>& materialized, const Launch& launch,
                   const std::vector<int>& roots, int n);

// A schedule point's fields, appended to a key.
void add_schedule(std::vector<int64_t>& key, const Schedule& s);

// The launch's own fields (kind, outputs, steps, shape of its rows, contraction, scatter,
// partials, domain) and, for every node reachable from its outputs, steps, contraction and
// scatter through the nodes it computes (up to and including the buffers it reads), the node and
// whether it is materialized. The legality checks (fusion_legality.hpp) and the roofline
// (roofline.hpp) read nothing else of the graph: two launches of one graph with equal keys get
// equal answers from them.
std::vector<int64_t> launch_key(const GraphView& g, const std::vector<char>& materialized,
                                const Launch& launch);

}  // namespace kiln::plan
