// KindRules: what each launch kind gives the planner, one row per kind, each defined in its file
// of src/plan/kinds/ beside the kind's lowering: its name, its schedule domain (the points it may
// run at; every point computes the same bits), a point's name, its grid, whether a launch has
// nothing to compute, and the LaunchWriter method that writes its body. rules(kind) is the one
// place that dispatches on the kind for these; the cost model (roofline.cpp) and the partition
// still test the kind where their formulas differ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/graph_view.hpp"
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
};

const KindRules& rules(LaunchKind kind);

// The rows, one per kind (map.cpp, rows.cpp, scatter.cpp, contraction.cpp).
extern const KindRules kMapRules, kRowRules, kSegmentsRules, kScatterRules, kContractRules,
    kConv1dRules, kAttentionRules;

}  // namespace kiln::plan
