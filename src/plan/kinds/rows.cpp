// Row and segments launches: one thread group per row computes its folds in the canonical
// order (graph/fold_order.hpp) and the maps between them, then its outputs; a segments launch
// folds the segments of long rows ahead of the row launch that folds their values.
#include "plan/fusion_legality.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/launch_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/break_switch.hpp"
#include "base/ceil_div.hpp"
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
                    Var kept = k_.let(v, node_name(in, "c"));
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
                Var v = k_.let(compute(step, at), node_name(step));
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
                Var v = k_.let(compute(step, at), node_name(step));
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

namespace {

// A thread per row (blocks of 64 or 256), a warp (32 threads) per row, a block of 128 or 256
// threads per row (threads per row never above the fold's lanes), the shared ones with 1 or 4
// rounds of the fold's loads in flight a step, and, for rows of at most 64 elements a lane, a
// thread a lane keeping its elements in locals. A segments launch: the same with a segment of
// a row in place of the row.
std::vector<Schedule> rows_domain(const Launch& l, const GraphView&) {
    std::vector<Schedule> d;
    // The fold's level its threads share: a segment (256 lanes) in a segments launch; in a row
    // launch the order's last level, over the segments' values after a segments launch.
    const int64_t n = l.partials.empty() ? l.extent : graph::segment_count(l.extent);
    const int W =
        l.kind == LaunchKind::segments ? graph::kSegmentLanes : graph::last_level_lanes(n);
    d.push_back({.block = 64, .threads = 1});
    d.push_back({.block = 256, .threads = 1});
    // Threads sharing a row, each with one round of loads in flight a step or four.
    for (int unroll : {1, 4}) {
        if (W >= 32) {
            d.push_back({.block = 128, .threads = 32, .unroll = unroll});
            d.push_back({.block = 256, .threads = 32, .unroll = unroll});
        }
        if (W >= 128) d.push_back({.block = 128, .threads = 128, .unroll = unroll});
        if (W >= 256) d.push_back({.block = 256, .threads = 256, .unroll = unroll});
    }
    // The row kept by its threads, a lane each: for rows of at most 64 elements a thread.
    if (l.kind == LaunchKind::row && l.partials.empty() && !graph::segmented(n) && W >= 32 &&
        n <= int64_t{64} * W) {
        d.push_back({.block = W, .threads = W, .cache = true});
        if (W < 256) d.push_back({.block = 256, .threads = W, .cache = true});
    }
    return d;
}

std::string rows_point(const Schedule& s) {
    return fmt::format("b{}_r{}{}{}", s.block, s.threads,
                       s.unroll == 1 ? "" : fmt::format("_u{}", s.unroll), s.cache ? "_c" : "");
}

int64_t row_grid(const Launch& l, const GraphView&, const Schedule& s) {
    return std::max<int64_t>(1, ceil_div(l.rows, s.block / s.threads));
}

int64_t segments_grid(const Launch& l, const GraphView&, const Schedule& s) {
    return std::max<int64_t>(
        1, ceil_div(l.rows * graph::segment_count(l.extent), s.block / s.threads));
}

bool rows_empty(const Launch& l, const GraphView&) {
    return l.rows == 0;
}

// A row's passes: one per fold and one more for a full-size output.
int row_pass_count(const Launch& l, const GraphView& g) {
    int folds = 0;
    bool full_out = false;
    for (int st : l.row_steps) folds += g.node(st).as<graph::op::Fold>() ? 1 : 0;
    for (int o : l.outputs) full_out = full_out || g.node(o).shape == l.full;
    return std::max(1, folds + (full_out ? 1 : 0));
}

// A row is read once per pass; the cached form reads it once. Passes after the first over a row
// that fits in the cache cost a share of a pass from memory, and the maps feeding a fold run
// again in every later pass.
cost::Passes row_passes(const Launch& l, const GraphView& g, const Schedule& s) {
    if (s.cache) return {};
    const int passes = row_pass_count(l, g);
    const bool fits = static_cast<double>(l.extent) * 4 <= cost::kRowCacheBytes;
    return {.reads = 1 + (passes - 1) * (fits ? cost::kCachedPassShare : 1.0),
            .flops = double(passes)};
}

// A row's thread has `unroll` loads in flight; the cached form issues all of its elements'
// loads before the first fold.
double row_simt_bytes_in_flight(const Launch& l, const Schedule& s) {
    return 4.0 *
           (s.cache ? std::min<double>(16, std::ceil(double(l.extent) / s.threads)) : s.unroll);
}

// A thread per row reads a row alone: a warp's loads of rows laid out contiguously touch 32
// lines at once, while rows that are columns of the data read coalesced (and the reverse for
// threads sharing a row).
double row_simt_bandwidth_share(const Launch& l, const Schedule& s) {
    const bool rows_contiguous = !l.axes.empty() && l.axes.back() == int(l.full.size()) - 1;
    return (s.threads == 1) == rows_contiguous ? cost::kUncoalesced : 1.0;
}

// Threads sharing a row pay a barrier per level of the fold's tree above the warp.
double row_simt_extra_us(const Launch& l, const Schedule& s, const DeviceFacts& f) {
    if (s.threads <= 32) return 0;
    const double levels = std::log2(s.threads / 32.0) + 1;
    const double rows_at_once = f.units * cost::kResidentThreads / s.threads;
    return static_cast<double>(l.rows) / rows_at_once * levels * cost::kBarrierUs;
}

// A CPU core runs a block's threads sharing a row one after another: each pass walks the row's
// elements thread by thread; a row the threads keep is walked once, and its lanes' values folded.
double row_cpu_extra_us(const Launch& l, const GraphView& g, const Schedule& s,
                        const DeviceFacts& f, bool) {
    if (s.threads <= 1) return 0;
    const double rows = static_cast<double>(l.rows);
    if (s.cache) return rows * s.threads * cost::kCpuKeptRowLaneUs / f.units;
    return rows * static_cast<double>(l.extent) * row_pass_count(l, g) *
           cost::kCpuSharedRowElementUs / f.units;
}

}  // namespace

const KindRules kRowRules{"row",
                          rows_domain,
                          rows_point,
                          row_grid,
                          rows_empty,
                          &LaunchWriter::write_row,
                          {.passes = row_passes,
                           .folds_partials = true,
                           .simt_bytes_in_flight = row_simt_bytes_in_flight,
                           .simt_bandwidth_share = row_simt_bandwidth_share,
                           .simt_extra_us = row_simt_extra_us,
                           .cpu_extra_us = row_cpu_extra_us},
                          row_launch_refusal,
                          nullptr,
                          {.reads_partials = true}};
const KindRules kSegmentsRules{"segments", rows_domain,
                               rows_point, segments_grid,
                               rows_empty, &LaunchWriter::write_segments,
                               {},         segments_launch_refusal,
                               nullptr,    {.writes_partials = true}};

}  // namespace kiln::plan
