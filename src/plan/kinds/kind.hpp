// KindRules: what each launch kind gives the planner, one row per kind, each defined in its file
// of src/plan/kinds/ beside the kind's lowering: its name, its schedule domain (the points it may
// run at; every point computes the same bits), a point's name, its grid, whether a launch has
// nothing to compute, the LaunchWriter method that writes its body, and its terms of the cost
// model (cost.hpp). rules(kind) is the one place that dispatches on the kind for these; the
// partition still tests the kind where it builds and orders launches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/graph_view.hpp"
#include "plan/kinds/cost.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

class LaunchWriter;

struct KindRules {
    const char* name;
    std::vector<Schedule> (*domain)(const Launch& launch, const GraphView& g);
    std::string (*point_name)(const Schedule& s);
    int64_t (*grid)(const Launch& launch, const GraphView& g, const Schedule& s);  // >= 1 block
    bool (*empty)(const Launch& launch, const GraphView& g);
    void (LaunchWriter::*write)();
    cost::KindCost cost;
};

const KindRules& rules(LaunchKind kind);

// The rows, one per kind (map.cpp, rows.cpp, scatter.cpp, contraction.cpp).
extern const KindRules kMapRules, kRowRules, kSegmentsRules, kScatterRules, kContractRules,
    kConv1dRules, kAttentionRules;

}  // namespace kiln::plan
