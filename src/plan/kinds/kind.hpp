// KindRules: what each launch kind gives the planner, one row per kind, each defined in its file
// of src/plan/kinds/ beside the kind's lowering: its name, its schedule domain (the points it may
// run at; every point computes the same bits), a point's name, its grid, whether a launch has
// nothing to compute, the LaunchWriter method that writes its body, its terms of the cost model
// (cost.hpp), whether its launch can be written for a proposed partition (fusion_legality.hpp;
// null: always), whether it checks indices as it runs (a fault record; null: never) and how the
// partition orders it among the others. rules(kind) is the one place that dispatches on the kind
// for these; the partition names a kind only where it creates a launch of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/graph_view.hpp"
#include "plan/kinds/cost.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

class LaunchWriter;

// What the partition's ordering needs to know of a kind's launches beyond the nodes they write.
struct KindOrder {
    // segments (contract_chunks): writes no node; reads its folds' inputs (its operands) and
    // writes their segment values (chunk sums: the plan's scratch) for the row (chunk_sum) launch
    // after it, which reads them (reads_partials).
    bool writes_partials = false;
    bool reads_partials = false;
    // scatter: adds its sources into its output in place, after the map launch that copies the
    // base there; it reads its inputs, and readers of its output wait for it.
    bool in_place = false;
    // map: launches of one shape merge into one where their order allows.
    bool merges = false;
};

struct KindRules {
    const char* name;
    std::vector<Schedule> (*domain)(const Launch& launch, const GraphView& g);
    std::string (*point_name)(const Schedule& s);
    int64_t (*grid)(const Launch& launch, const GraphView& g, const Schedule& s);  // >= 1 block
    bool (*empty)(const Launch& launch, const GraphView& g);
    void (LaunchWriter::*write)();
    cost::KindCost cost;
    std::optional<std::string> (*fusible)(const GraphView& g, const std::vector<char>& materialized,
                                          const Launch& launch) = nullptr;
    bool (*has_faults)(const Launch& launch, const GraphView& g) = nullptr;
    KindOrder order = {};
};

const KindRules& rules(LaunchKind kind);

// The rows, one per kind (map.cpp, rows.cpp, scatter.cpp, contraction.cpp).
extern const KindRules kMapRules, kRowRules, kSegmentsRules, kScatterRules, kContractRules,
    kConv1dRules, kAttentionRules, kContractChunksRules, kChunkSumRules;

}  // namespace kiln::plan
