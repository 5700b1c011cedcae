// partition: which nodes a plan materializes and which launches compute them. Every form it is
// asked for computes the same bits; whether a form can be written at all is fusion_legality.cpp's
// to say (a group it refuses is split), which form is worth it choose.cpp's.
//
// Maps, views, constants and generators are never launches of their own unless something must
// read them from memory (a requested output, or a value two launches need that one of them cannot
// compute): each launch inlines them where it needs them. Folds gather into groups — folds over
// the same input shape and axes that depend on one another or read the same data (softmax's max
// and sum, layer_norm's mean and variance) — and each group is one row launch. A group runs
//   fused: the maps that depend on its folds and fit its row or its full space are computed in
//          its launch (an epilogue), so softmax is one launch;
//   split: each fold is a launch of its own and everything after it reads its result from memory.
// The member sweep (issue conformance) runs every group both ways.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// A group of folds, or a contraction group: one Matmul node (folds = {it}, full = its shape,
// no axes), fused with the maps after it that read it element for element (its epilogue) or
// split (the Matmul alone).
struct FoldGroup {
    std::vector<int> folds;  // in topological order
    graph::Shape full;
    std::vector<int> axes;
    bool contraction = false;
};

enum class GroupForm : uint8_t { fused, split, segments };
const char* name(GroupForm f);

// Why group `group` cannot run in form `form` (fusion_legality.hpp).
struct FusionRefusal {
    int group = -1;
    GroupForm form = GroupForm::fused;
    std::string reason;
};

// The fold groups of a graph, in topological order of their first fold (fold_groups.cpp).
std::vector<FoldGroup> fold_groups(const GraphView& g);

// The launches computing the graph's outputs with group i in forms[i] (one entry per
// fold_groups(g) entry), ordered so every launch comes after those whose outputs it reads.
// Launches carry their domains, with `chosen` = 0. `stored`: nodes that would be inlined
// (generators) computed once into a buffer instead, for every launch that needs them to read.
// Where the legality check refuses a group's form, `refusal` says which and why (the first
// found), and `plan` is empty. `memo` (fusion_legality.hpp) keeps the checks' answers between
// partitions of the same graph.
class RefusalMemo;

struct Partitioned {
    Plan plan;
    std::optional<FusionRefusal> refusal;
};
Partitioned partition(const GraphView& g, const std::vector<FoldGroup>& groups,
                      const std::vector<GroupForm>& forms, const std::vector<int>& stored = {},
                      RefusalMemo* memo = nullptr);

// partition(), splitting each group whose form is refused until none is; `forms` is left as
// planned. With `refusals`, each refusal in the order they were met.
Plan partition_or_split(const GraphView& g, const std::vector<FoldGroup>& groups,
                        std::vector<GroupForm>& forms,
                        std::vector<FusionRefusal>* refusals = nullptr,
                        const std::vector<int>& stored = {});

// The folds and contractions node n's value needs through nodes `materialized` leaves unwritten
// (n itself when it is one), ascending.
std::vector<int> folds_needed(const GraphView& g, int n, const std::vector<char>& materialized);

// The scratch buffer (dtype, element count) of node n's partials in launch l (Launch::partials):
// a fold's segment values in its dtype (segment_count(extent) a row), a contraction's chunk sums
// in f32 (contraction_chunks(k) an element).
std::pair<DType, int64_t> partial_scratch(const GraphView& g, const Launch& l, int n);

// Whether node i is computed by inlining wherever it is needed (map, view, constant, generator).
bool inlineable(const graph::Node& n);

// Whether node i is computed by a group's launch: a fold or a contraction.
bool is_grouped(const GraphView& g, int i);

}  // namespace kiln::plan
