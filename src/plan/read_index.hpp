// read_index: where a node reads its inputs for one element of it, as Index expressions. Shared by
// the launch writer (which reads the values there) and the fusion legality check (which follows
// the same indices through a launch without writing a kernel, fusion_legality.hpp), so both
// see the same element for every read.
#pragma once

#include <optional>
#include <vector>

#include "graph/node.hpp"
#include "plan/graph_view.hpp"
#include "plan/index.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// e in the index type `type` (cast where it has another type).
Expr as_index(DType type, const Expr& e);

// The range of sizes one kernel with runtime sizes serves for a race decision and an index type:
// the power of two at or above `size` (0 for 0).
int64_t size_bucket(int64_t size);

// The index type of a launch at a schedule: i64 where some count's size bucket could pass 2^31
// (with a margin for the threads past the end) or where the options ask for it, else i32. Chosen
// from the bucket rather than the exact count, so every size of a bucket gets the same kernel.
DType index_type_of(const GraphView& g, const Launch& l, const Schedule& s);

// An expand from `in` to `out` (numpy broadcasting, axes aligned at the end): in's trailing axes
// that keep their extent in out, from axis `first` on, one run of `elements` in both.
struct KeptRun {
    size_t first = 0;
    int64_t elements = 1;
};
KeptRun kept_run(const graph::Shape& in, const graph::Shape& out);

// View n's input at element idx of n; for a pad, `inside` (when set) says whether the element
// lies inside the input (else it is the pad value; the input's index is clamped into range).
struct ViewRead {
    Index index;
    std::optional<Expr> inside;
};
ViewRead view_read(const GraphView& g, int n, const graph::op::View& v, Index& idx);

// The parts concat n reads for element idx, from the last part to the first, parts of extent 0
// left out: part `input` at `index` (clamped into the part) where idx's coordinate on the axis is
// below `end`.
struct ConcatRead {
    int input;
    Index index;
    int64_t end;
};
std::vector<ConcatRead> concat_reads(const GraphView& g, int n, const graph::op::Concat& c,
                                     Index& idx);

// Gather n at element idx: where it reads its index tensor, and where it reads its source once
// the index (`position`, of the index type) is known.
Index gather_index_at(const GraphView& g, int n, const graph::op::Gather& gt, Index& idx);
Index gather_source_at(const GraphView& g, int n, const graph::op::Gather& gt, Index& idx,
                       const Expr& position);

// Element i of row `row` of a row or segments launch, in the launch's full space: its
// coordinates are the row's (in the row space) and i's (in the reduced axes), so a value
// broadcast along the reduced axes is read at exactly the row's own index.
Index row_element(const Launch& l, DType type, const Expr& row, const Expr& i);

}  // namespace kiln::plan
