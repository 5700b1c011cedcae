// Fusion legality: whether a group of a proposed partition can run in the form asked for, decided
// from the graph before any kernel is written, and the reason when it cannot. No exceptions: a
// check answers nullopt (legal) or the reason. What is worth fusing (the cost model's choice of
// form, the prologue's limits) is policy, in choose.cpp and contract.hpp.
//
// A form is refused where
//   - a contraction is asked for the segments form (k's chunks split across blocks) and is not a
//     matmul, or no split point applies to it (k of one chunk);
//   - a segments group's folds are too short to have segments, its outputs are not one value a
//     row, or its folds read each other (segment values are folded by a later launch);
//   - a launch would read a value its kernel computes once per row (a fold, a row-space map) or
//     per element (a contraction's result, for its epilogue) at another row or element, or would
//     need a fold that no earlier launch writes and it does not compute (a fold over other axes
//     read by one of its folds).
// The last is found by following, for each value the launch writes, the index of every element
// it reads through the inlined maps, views, concats and gathers (read_index.hpp, the launch
// writer's own index arithmetic) with symbols for the kernel's rows, elements and loop
// variables, exactly as the writer would read it at the launch's first schedule point.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/graph_view.hpp"
#include "plan/partition.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// Why group `group` has no segments form whatever the plan around it (a contraction with no
// split point, folds too short to cut); nullopt: it may have one.
std::optional<std::string> segments_form_refusal(const GraphView& g, const FoldGroup& group);

// Why group `group`'s segments form cannot be built for a launch writing `outs`, with the
// nodes of `materialized` read from buffers; nullopt: it can.
std::optional<std::string> segments_refusal(const GraphView& g, const FoldGroup& group,
                                            const std::vector<int>& outs,
                                            const std::vector<char>& materialized);

// Why `launch` of a proposed plan (its domain set; the nodes of `materialized` read from
// buffers) cannot be written; nullopt: it can. Dispatched to its kind's check
// (KindRules::fusible); kinds without one (map, scatter) are always legal.
std::optional<std::string> launch_refusal(const GraphView& g, const std::vector<char>& materialized,
                                          const Launch& launch);

// launch_refusal over the many partitions of one graph that choose_plan tries: each answer is
// kept with everything that decides it (launch_key.hpp, and the launch's index type), so a launch
// a try leaves as it was is checked once.
class RefusalMemo {
  public:
    explicit RefusalMemo(const GraphView& g) : g_(g) {}
    std::optional<std::string> refusal(const std::vector<char>& materialized, const Launch& launch);

  private:
    const GraphView& g_;
    std::map<std::vector<int64_t>, std::optional<std::string>> answers_;
};

// The kinds' checks, named by their KindRules rows (kinds/rows.cpp, kinds/contraction.cpp).
std::optional<std::string> row_launch_refusal(const GraphView& g,
                                              const std::vector<char>& materialized,
                                              const Launch& launch);
std::optional<std::string> segments_launch_refusal(const GraphView& g,
                                                   const std::vector<char>& materialized,
                                                   const Launch& launch);
std::optional<std::string> contraction_launch_refusal(const GraphView& g,
                                                      const std::vector<char>& materialized,
                                                      const Launch& launch);

// A refusal as the plan dump and `kiln profile` show it: "group 1 fused refused: ...; split
// instead (the group of %3 %5)".
std::string describe(const FusionRefusal& refusal, const FoldGroup& group);

}  // namespace kiln::plan
