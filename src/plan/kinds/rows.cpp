// Row and segments launches: one thread group per row computes its folds in the canonical
// order (graph/fold_order.hpp) and the maps between them, then its outputs; a segments launch
// folds the segments of long rows ahead of the row launch that folds their values.
#include "plan/launch_writer.hpp"

#include <fmt/format.h>

#include "base/ceil_div.hpp"
#include "base/break_switch.hpp"
#include "graph/fold_order.hpp"
#include "ir/lower_folds.hpp"

namespace kiln::plan {

using graph::Node;

// One thread group per segment of a row: the segment's fold, written as the row's segment
// value for the row launch that follows.
void LaunchWriter::write_segments() {
    const int64_t M = graph::segment_count(l_.extent);
    thread_groups(l_.rows * M, [&](const Expr& group, const Expr& t, const Expr& inside) {
        Var row = k_.let(group / it(M), "row");
        Var segment = k_.let(group % it(M), "segment");
        std::vector<std::pair<int, Var>> values;
        for (int f : l_.row_steps) {
            const auto op = fold_of(g_.node(f).as<graph::op::Fold>()->kind).spec.op;
            const int in = g_.inputs[size_t(f)][0];
            values.emplace_back(
                f, segment_fold(g_.node(f).dtype, op, l_.extent, segment, s_.threads, [&](Expr i) {
                    memo_.clear();
                    return value_at(in, full_index(row, i));
                }));
        }
        k_.if_(t == 0 && inside, [&] {
            for (const auto& [f, v] : values)
                scratch(l_.partials.at(f), g_.node(f).dtype, Access::write)[group] = v;
        });
    });
}

// A row whose elements each thread keeps (Schedule::cache, threads = the fold's W lanes):
// thread t holds elements t, t+W, t+2W, ... (its lane's, in order), loads them and computes
// each fold's inputs once into locals, folds its lane left to right (elements past the row
// skipped), and the fold over the W lane values (one a thread) makes the halving tree: the
// canonical order's bits. The epilogue reads the same elements from the locals.
void LaunchWriter::write_row_cached() {
    const int W = s_.threads;
    const int64_t n = l_.extent, K = ceil_div(n, W);
    thread_groups(l_.rows, [&](const Expr& row, const Expr& t, const Expr& inside) {
        std::vector<Index> element;
        std::vector<Expr> valid;
        for (int64_t k = 0; k < K; ++k) {
            const Expr j = as_index(t) + it(k * W);
            const bool whole = (k + 1) * W <= n;
            element.push_back(full_index(row, whole ? j : min(j, it(n - 1))));
            valid.push_back(whole ? Expr(ir::int_const(DType::boolean, 1)) : j < it(n));
        }
        caching_ = true;
        for (int step : l_.row_steps) {
            const Node& node = g_.node(step);
            Index at(node.shape, index_type_, row);
            if (const auto* f = node.as<graph::op::Fold>()) {
                const int in = g_.inputs[size_t(step)][0];
                const auto op = fold_of(f->kind).spec.op;
                Var acc = k_.let(Expr(ir::fold_identity(op, node.dtype)), "lane");
                const bool reversed = break_switch("fold_order");  // tests only
                for (int64_t step_k = 0; step_k < K; ++step_k) {
                    const int64_t k = reversed ? K - 1 - step_k : step_k;
                    Expr v = value_at(in, element[size_t(k)]);
                    Var kept = k_.let(v, fmt::format("n{}c", in));
                    remember(in, element[size_t(k)], kept);
                    Expr next(ir::fold_combine(op, acc.expr().node(), kept.expr().node()));
                    acc = (k + 1) * W <= n ? next : select(valid[size_t(k)], next, acc);
                }
                // One element a lane: the fold is its tree over the lanes' values.
                Fold lanes = Fold{{op}}.lanes(W).threads(W);
                Var v = k_.fold(node.dtype, Expr(ir::int_const(DType::i32, W)), lanes,
                                [&](Expr) { return Expr(acc); });
                row_values_.emplace(step, RowValue{v, at});
            } else {
                Var v = k_.let(compute(step, at), fmt::format("n{}", step));
                row_values_.emplace(step, RowValue{v, at});
            }
        }
        caching_ = false;
        write_row_outputs(row, t, inside, [&](const std::vector<int>& full_outputs) {
            for (int64_t k = 0; k < K; ++k)
                k_.if_(valid[size_t(k)], [&] {
                    for (int o : full_outputs)
                        buffers_.at(o)[element[size_t(k)].linear()] =
                            value_at(o, element[size_t(k)]);
                });
        });
        element_cache_.clear();
    });
}

// The row launch's outputs: one value a row (thread 0 of the group) and, through
// `full`, one per element of the row.
void LaunchWriter::write_row_outputs(const Expr& row, const Expr& t, const Expr& inside,
                                     const std::function<void(const std::vector<int>&)>& full) {
    memo_.clear();
    std::vector<int> row_outputs, full_outputs;
    for (int o : l_.outputs)
        (g_.node(o).numel() == l_.rows && g_.node(o).shape != l_.full ? row_outputs : full_outputs)
            .push_back(o);
    if (!row_outputs.empty())
        k_.if_(t == 0 && inside, [&] {
            for (int o : row_outputs)
                buffers_.at(o)[row] = value_at(o, Index(g_.node(o).shape, index_type_, row));
        });
    if (!full_outputs.empty()) k_.if_(inside, [&] { full(full_outputs); });
}

void LaunchWriter::write_row() {
    if (s_.cache) return write_row_cached();
    const int T = s_.threads;
    thread_groups(l_.rows, [&](const Expr& row, const Expr& t, const Expr& inside) {
        for (int step : l_.row_steps) {
            const Node& node = g_.node(step);
            Index at(node.shape, index_type_, row);
            if (const auto* f = node.as<graph::op::Fold>()) {
                const int in = g_.inputs[static_cast<size_t>(step)][0];
                const auto op = fold_of(f->kind).spec.op;
                Var v = l_.partials.count(step)
                            ? fold_partials(step, op, row, T)
                            : canonical_fold(node.dtype, op, l_.extent, T, [&](Expr i) {
                                  memo_.clear();
                                  return value_at(in, full_index(row, i));
                              });
                row_values_.emplace(step, RowValue{v, at});
            } else {
                memo_.clear();
                Var v = k_.let(compute(step, at), fmt::format("n{}", step));
                row_values_.emplace(step, RowValue{v, at});
            }
        }
        write_row_outputs(row, t, inside, [&](const std::vector<int>& full_outputs) {
            k_.for_(
                as_index(t), it(l_.extent),
                [&](Expr j) {
                    memo_.clear();
                    Index idx = full_index(row, j);
                    for (int o : full_outputs) buffers_.at(o)[idx.linear()] = value_at(o, idx);
                },
                it(T));
        });
    });
}

// A fold of the segment values a segments launch wrote: the segment values' own canonical
// fold, which completes the canonical order of the row.
Var LaunchWriter::fold_partials(int fold, ir::FoldOp op, const Expr& row, int threads) {
    const int64_t M = graph::segment_count(l_.extent);
    Memory p = scratch(l_.partials.at(fold), g_.node(fold).dtype, Access::read);
    return canonical_fold(g_.node(fold).dtype, op, M, threads,
                          [&](Expr i) { return Expr(p[row * it(M) + i]); });
}

}  // namespace kiln::plan
