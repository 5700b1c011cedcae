// LaunchWriter: one launch of a plan at one schedule point written as a DSL kernel
// (lower_launch.hpp). What every launch kind shares is in launch_writer.cpp: the buffers and the
// fault record, the value of any node inlined at an index (maps, views, concats, gathers,
// generators), thread groups and canonical folds over a row. Each kind's body is in
// src/plan/kinds/: map.cpp, rows.cpp (row and segments launches), scatter.cpp, contraction.cpp
// (matmul, conv1d, attention, and a matmul split by k's chunks).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/node.hpp"
#include "kiln/dsl.hpp"
#include "ops/kernel_parts.hpp"
#include "ops/matmul/matmul.hpp"
#include "plan/contract.hpp"
#include "plan/graph_view.hpp"
#include "plan/index.hpp"
#include "plan/lower_launch.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// The DSL fold of a graph fold kind.
Fold fold_of(graph::FoldKind kind);

class LaunchWriter {
  public:
    LaunchWriter(const GraphView& g, const std::vector<char>& materialized, const Launch& l,
                 const Schedule& s);

    LoweredLaunch lower();

    // Each kind's body (src/plan/kinds/), called through its KindRules::write.
    // ops::matmul's work at the point's variant, reading the operands in place.
    void write_contract();
    // A split point's work: each block one chunk of k for one tile, its sums
    // into the launch's scratch.
    void write_contract_chunks();
    // Each element's chunk sums added in the op's order, then stored with the epilogue.
    void write_chunk_sum();
    // ops::conv1d's work at the point's variant, x and w dense.
    void write_conv1d();
    // ops::attention's work at the point's variant, q, k and v dense.
    void write_attention();
    void write_map();
    // The map's row-loop form (Schedule::row_loop), from write_map.
    void write_map_rows();
    // One thread group per segment of a row: the segment's fold, written as the row's segment
    // value for the row launch that follows.
    void write_segments();
    void write_row();
    void write_scatter();

  private:
    enum class Access { read, write, read_write };

    Expr it(int64_t v) const { return index_const(index_type_, v); }
    Expr as_index(const Expr& e) const;

    // The buffer parameter of node n (declared on first use).
    Memory buffer_for(int n, Access access);

    // Node n's name in this kernel, `prefix` + its number in the order the launch first names
    // nodes: launches of one structure (a model's repeated layers) lower to the same kernel,
    // compiled once and raced once, wherever their nodes sit in the graph.
    std::string node_name(int n, std::string_view suffix = "");

    Memory faults();
    // The i64 scalar parameter holding n + 1 for the fault record (declared on first use).
    Expr fault_site(int n);
    // A runtime size: the index-typed scalar parameter `name` (declared on first use) holding
    // `value`, an extent that only bounds the launch's iteration (rows, elements, columns), so
    // that launches of one structure at another size of value's power-of-two range
    // (size_bucket, a requirement of the kernel) are the same kernel. Extents inside the index
    // arithmetic (inner extents and strides, fold lengths, tiles) stay constants.
    Expr runtime_size(const std::string& name, int64_t value) {
        return runtime_size(name, value, index_type_);
    }
    // The same as a parameter of `type` (i32 or i64), for an op's body that takes sizes so.
    Expr runtime_size(const std::string& name, int64_t value, DType type);
    // `count`, an iteration count that is `lead` (a leading extent: the runtime size `name`)
    // times the other extents (constants), as that product: launches of one structure whose
    // leading extents lie in one range are one kernel whatever their other extents' product.
    Expr runtime_count(const std::string& name, int64_t count, int64_t lead);
    // The leading extent of a row or segments launch's rows: its first axis not reduced (1 when
    // every axis is).
    int64_t leading_row_extent() const;
    // A scalar argument bound to the parameter just declared.
    void bind_scalar(Arg value, int fault_site_of = -1);

    // The scratch buffer of lane partials k.
    Memory scratch(int k, DType dtype, Access access);

    // Records a bad index: the first fault record wins where several threads race.
    void record_fault(int n, const Expr& bad, Index& at, const Expr& value);

    // ---- contractions ------------------------------------------------------------------------

    // The contraction's store: its value (f32) at element `linear` of its node, rounded once to
    // the node's dtype, then each of the launch's outputs computed there from it (an epilogue).
    // `coords`, where given, are the element's coordinates too (an epilogue's broadcast operand,
    // a bias, then reads at its column without dividing the linear index).
    void store_contraction(const Expr& linear, const Expr& acc,
                           const std::optional<std::vector<Expr>>& coords = std::nullopt);

    static Expr i32(int64_t v) { return constant(DType::i32, static_cast<int32_t>(v)); }

    // A Matmul's shape, operands (views over their sources), types and the point's variant.
    struct MatmulRead {
        ContractShape shape;
        ops::MatmulViews views;
        ops::MatmulTypes types;
        const ops::MatmulSchedule& point;
    };
    MatmulRead matmul_read();
    // The linear index of element (batch, row, col) of the Matmul node.
    Expr matmul_element(const MatmulRead& r, const Expr& batch, const Expr& row, const Expr& col);

    // A contraction's operand as its kernel reads it: a materialized node's buffer, or a
    // prologue's value computed at each element read (dense, row-major in the node's shape).
    ops::ElementRead elements(int source);

    // ---- values -----------------------------------------------------------------------------

    Expr value_at(int n, Index idx);

    Expr load(int n, Index& idx);

    void remember(int n, Index& idx, const Expr& value);

    Expr compute(int n, Index& idx);

    Expr view(int n, const graph::op::View& v, Index& idx);

    Expr concat(int n, const graph::op::Concat& c, Index& idx);

    Expr gather(int n, const graph::op::Gather& gt, Index& idx);

    // ---- launch kinds (src/plan/kinds/) and the row machinery they share -----------------------

    // The full-space index of element i of row `row`: its coordinates are the row's (in the
    // launch's row space) and i's (in the reduced axes), so a value broadcast along the reduced
    // axes is read at exactly the row's own index.
    Index full_index(const Expr& row, const Expr& i);

    // `count` thread groups of s_.threads threads: body(group, t, inside) for each, where group
    // is clamped to the last one (every thread reaches the folds' barriers; past the end a
    // group recomputes the last one and must write nothing) and `inside` says it is not past it.
    void thread_groups(int64_t count,
                       const std::function<void(const Expr&, const Expr&, const Expr&)>& body);

    // A row whose elements each thread keeps (Schedule::cache, threads = the fold's W lanes):
    // thread t holds elements t, t+W, t+2W, ... (its lane's, in order), loads them and computes
    // each fold's inputs once into locals, folds its lane left to right (elements past the row
    // skipped), and the fold over the W lane values (one a thread) makes the halving tree: the
    // canonical order's bits. The epilogue reads the same elements from the locals.
    void write_row_cached();

    // The row launch's outputs: one value a row (thread 0 of the group) and, through
    // `full`, one per element of the row.
    void write_row_outputs(const Expr& row, const Expr& t, const Expr& inside,
                           const std::function<void(const std::vector<int>&)>& full);

    // The canonical fold (graph/fold_order.hpp) of n elements, element(i) giving element i (an
    // index-typed i): the one-level order as one fold of `threads` threads, or segments folded by
    // one thread each inside the fold of their values.
    Var canonical_fold(DType type, ir::FoldOp op, int64_t n, int threads,
                       const std::function<Expr(Expr)>& element);

    // Segment s of a segmented fold of n elements (kSegmentLanes lanes, its last elements absent
    // past n), folded by `threads` threads.
    Var segment_fold(DType type, ir::FoldOp op, int64_t n, const Expr& s, int threads,
                     const std::function<Expr(Expr)>& element);

    // A fold of the segment values a segments launch wrote: the segment values' own canonical
    // fold, which completes the canonical order of the row.
    Var fold_partials(int fold, ir::FoldOp op, const Expr& row, int threads);

    struct RowValue {
        Expr value;
        Index index;
    };

    const GraphView& g_;
    const std::vector<char>& materialized_;
    const Launch& l_;
    const Schedule& s_;
    KernelBuilder k_;
    DType index_type_ = DType::i32;
    std::map<int, bool> is_output_;
    std::map<int, Memory> buffers_;
    std::map<int, int> local_numbers_;  // node_name's numbering
    std::map<int, Expr> fault_site_params_;
    std::map<std::string, Expr> size_params_;
    std::vector<Arg> scalars_;
    std::vector<int> scalar_sites_;  // LoweredLaunch::scalar_sites
    int64_t largest_size_ = 0;
    std::optional<Memory> faults_;
    std::map<int, Memory> scratch_;
    std::vector<int> bound_;
    std::map<int, RowValue> row_values_;
    struct Memo {
        ir::ExprRef key;  // kept alive while it is a key
        Expr value;
    };
    std::map<std::pair<int, const ir::ExprNode*>, Memo> memo_;
    // A cached row's element values, kept in locals for the whole row (write_row_cached).
    std::map<std::pair<int, const ir::ExprNode*>, Memo> element_cache_;
    bool caching_ = false;  // loads at an element's index are kept in element_cache_
    // The wide loads of the current element group: a node's elements from `base` on (a node
    // may be read at more than one base in a group, through different expands).
    struct VectorLoad {
        int node;
        Expr base;
        std::vector<Var> lanes;
    };
    std::vector<VectorLoad> vector_loads_;
};

}  // namespace kiln::plan
