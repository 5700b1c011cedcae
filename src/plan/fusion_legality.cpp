// Fusion legality (fusion_legality.hpp): the segments form's conditions and each launch's reads
// followed through its inlined nodes with symbolic indices.
#include "plan/fusion_legality.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/fold_order.hpp"
#include "kiln/ops/contraction_order.hpp"
#include "plan/contract.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/launch_key.hpp"
#include "plan/read_index.hpp"

namespace kiln::plan {

namespace op = graph::op;

std::optional<std::string> segments_form_refusal(const GraphView& g, const FoldGroup& group) {
    if (group.contraction) {
        const int c = group.folds[0];
        if (!g.node(c).as<op::Matmul>()) return "only a matmul's k is split into chunks";
        if (split_variants(g, c).empty())
            return fmt::format("no split point applies (k = {}: {} chunk(s) of {} terms)",
                               contract_shape(g, c).k,
                               ops::contraction_chunks(contract_shape(g, c).k), ops::kChunkTerms);
        return std::nullopt;
    }
    int64_t extent = 1;
    for (int a : group.axes) extent *= group.full[static_cast<size_t>(a)];
    if (!graph::segmented(extent)) return "the group's folds are too short for segments";
    return std::nullopt;
}

std::optional<std::string> segments_refusal(const GraphView& g, const FoldGroup& group,
                                            const std::vector<int>& outs,
                                            const std::vector<char>& materialized) {
    if (auto why = segments_form_refusal(g, group)) return why;
    if (group.contraction) return std::nullopt;  // its outputs are the epilogue's, as fused
    const int64_t rows = g.node(group.folds[0]).numel();
    for (int o : outs)
        if (g.node(o).numel() != rows || g.node(o).shape == group.full)
            return fmt::format("node %{} ({}) is not one value a row", o,
                               graph::describe(g.node(o)));
    const std::set<int> mine(group.folds.begin(), group.folds.end());
    for (int f : group.folds)
        for (int other : folds_needed(g, g.inputs[size_t(f)][0], materialized))
            if (mine.count(other))
                return fmt::format("the group's folds read each other (node %{} reads %{})", f,
                                   other);
    return std::nullopt;
}

namespace {

// One launch's reads as its writer makes them (launch_writer.cpp's value_at and compute),
// with symbols for the kernel's variables: each read either reaches a buffer, a value computed
// here, or a node the launch cannot give, which refuses the launch.
class Reads {
  public:
    Reads(const GraphView& g, const std::vector<char>& materialized, const Launch& l)
        : g_(g), materialized_(materialized), type_(index_type_of(g, l, l.domain.at(0))) {
        for (int o : l.outputs) outputs_.insert(o);
    }

    // A variable of the kernel (a row, an element, a loop index): equal only to itself.
    Expr symbol() { return Expr(ir::make(type_, ir::expr::Local{next_symbol_++})); }
    DType type() const { return type_; }

    // Node n's value at idx (value_at).
    std::optional<std::string> read(int n, Index idx) {
        if (auto row = computed_.find(n); row != computed_.end()) {
            if (same_element(idx, row->second)) return std::nullopt;
            return fmt::format(
                "node %{} ({}) is read at another {} than the one its launch "
                "computes",
                n, graph::describe(g_.node(n)), is_contraction(g_.node(n)) ? "element" : "row");
        }
        if (materialized_[size_t(n)] && !outputs_.count(n)) return std::nullopt;
        if (!idx.has_linear()) return compute(n, idx);
        const ir::ExprRef& key = idx.linear().node();
        if (memo_.count({n, key.get()})) return std::nullopt;
        if (auto why = compute(n, idx)) return why;
        memo_.emplace(std::make_pair(n, key.get()), key);
        return std::nullopt;
    }

    // Node n computed at idx from its inputs (compute).
    std::optional<std::string> compute(int n, Index& idx) {
        const graph::Node& node = g_.node(n);
        const auto& in = g_.inputs[size_t(n)];
        if (node.resolved() || node.as<op::Constant>() || node.as<op::Generate>())
            return std::nullopt;
        if (node.as<op::Map>()) {
            for (int i : in)
                if (auto why = read(i, idx)) return why;
            return std::nullopt;
        }
        if (const auto* v = node.as<op::View>())
            return read(in[0], view_read(g_, n, *v, idx).index);
        if (const auto* c = node.as<op::Concat>()) {
            for (ConcatRead& part : concat_reads(g_, n, *c, idx))
                if (auto why = read(part.input, part.index)) return why;
            return std::nullopt;
        }
        if (const auto* gt = node.as<op::Gather>()) {
            if (auto why = read(in[1], gather_index_at(g_, n, *gt, idx))) return why;
            return read(in[0], gather_source_at(g_, n, *gt, idx, symbol()));
        }
        if (node.as<op::ScatterAdd>()) return read(in[0], idx);
        return fmt::format(
            "node %{} ({}) is needed but neither computed in this launch nor "
            "written by an earlier one",
            n, graph::describe(node));
    }

    // Node n's value is computed once at `at` (a row's fold or map, a contraction's element).
    void computed(int n, const Index& at) { computed_.insert_or_assign(n, at); }
    void forget_memo() { memo_.clear(); }

  private:
    const GraphView& g_;
    const std::vector<char>& materialized_;
    DType type_;
    std::set<int> outputs_;
    std::map<int, Index> computed_;
    // (node, linear index) pairs already read, the index kept alive while it is a key.
    std::map<std::pair<int, const ir::ExprNode*>, ir::ExprRef> memo_;
    int next_symbol_ = 0;
};

}  // namespace

// write_row at the first point (a thread per row, no cached row): each step in order, each
// fold's input at an element of the row, then the outputs.
std::optional<std::string> row_launch_refusal(const GraphView& g,
                                              const std::vector<char>& materialized,
                                              const Launch& l) {
    Reads r(g, materialized, l);
    const Expr row = r.symbol();
    for (int step : l.row_steps) {
        Index at(g.node(step).shape, r.type(), row);
        if (g.node(step).as<op::Fold>()) {
            if (!l.partials.count(step)) {
                r.forget_memo();
                if (auto why = r.read(g.inputs[size_t(step)][0],
                                      row_element(l, r.type(), row, r.symbol())))
                    return why;
            }
        } else {
            r.forget_memo();
            if (auto why = r.compute(step, at)) return why;
        }
        r.computed(step, at);
    }
    r.forget_memo();
    std::vector<int> full_outputs;
    for (int o : l.outputs) {
        const graph::Node& node = g.node(o);
        if (node.numel() != l.rows || node.shape == l.full) {
            full_outputs.push_back(o);
            continue;
        }
        if (auto why = r.read(o, Index(node.shape, r.type(), row))) return why;
    }
    if (full_outputs.empty()) return std::nullopt;
    r.forget_memo();
    Index element = row_element(l, r.type(), row, r.symbol());
    for (int o : full_outputs)
        if (auto why = r.read(o, element)) return why;
    return std::nullopt;
}

// write_segments: each fold's input at an element of a segment of the row.
std::optional<std::string> segments_launch_refusal(const GraphView& g,
                                                   const std::vector<char>& materialized,
                                                   const Launch& l) {
    Reads r(g, materialized, l);
    const Expr row = r.symbol();
    for (int f : l.row_steps) {
        r.forget_memo();
        if (auto why = r.read(g.inputs[size_t(f)][0], row_element(l, r.type(), row, r.symbol())))
            return why;
    }
    return std::nullopt;
}

// A contraction's operands that are prologues, read at some element, then its epilogue: each
// output at the element whose product the store has just computed.
std::optional<std::string> contraction_launch_refusal(const GraphView& g,
                                                      const std::vector<char>& materialized,
                                                      const Launch& l) {
    Reads r(g, materialized, l);
    const int c = l.contraction;
    // A launch reading the contraction's chunk sums (chunk_sum) reads none of its operands.
    const auto& in = rules(l.kind).order.reads_partials ? std::vector<int>{} : g.inputs[size_t(c)];
    for (size_t which = 0; which < in.size(); ++which) {
        const int source = g.node(c).as<op::Matmul>()
                               ? contract_operand(g, materialized, c, int(which)).source
                               : in[which];
        if (materialized[size_t(source)]) continue;
        if (auto why = r.read(source, Index(g.node(source).shape, r.type(), r.symbol())))
            return why;
    }
    const Expr element = r.symbol();
    const Index at(g.node(c).shape, r.type(), element);
    r.computed(c, at);
    for (int o : l.outputs)
        if (auto why = r.read(o, Index(g.node(c).shape, r.type(), element))) return why;
    return std::nullopt;
}

std::optional<std::string> launch_refusal(const GraphView& g, const std::vector<char>& materialized,
                                          const Launch& launch) {
    const auto check = rules(launch.kind).fusible;
    return check ? check(g, materialized, launch) : std::nullopt;
}

std::optional<std::string> RefusalMemo::refusal(const std::vector<char>& materialized,
                                                const Launch& l) {
    if (!rules(l.kind).fusible) return std::nullopt;
    std::vector<int64_t> key = launch_key(g_, materialized, l);
    key.push_back(int64_t(index_type_of(g_, l, l.domain.at(0))));
    auto [it, added] = answers_.try_emplace(std::move(key));
    if (added) it->second = rules(l.kind).fusible(g_, materialized, l);
    return it->second;
}

std::string describe(const FusionRefusal& refusal, const FoldGroup& group) {
    std::vector<std::string> nodes;
    for (int f : group.folds) nodes.push_back(fmt::format("%{}", f));
    return fmt::format("group {} {} refused: {}; split instead (the group of {})", refusal.group,
                       name(refusal.form), refusal.reason, fmt::join(nodes, " "));
}

}  // namespace kiln::plan
