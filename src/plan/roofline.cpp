// roofline: estimated time of a launch at a schedule point (see roofline.hpp for the model).
#include "plan/roofline.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <set>

#include "base/ceil_div.hpp"
#include "graph/fold_order.hpp"
#include "ops/attention.hpp"
#include "ops/conv1d.hpp"
#include "ops/matmul.hpp"
#include "plan/contract.hpp"
#include "plan/lower_launch.hpp"

namespace kiln::plan {

namespace op = graph::op;

namespace {

constexpr double kLatencyUs = 1.0;      // SIMT memory latency the loads in flight must cover
constexpr int kResidentThreads = 2048;  // per SIMT unit
// Threads a SIMT unit needs to keep its tensor cores busy: 8 warps, each with a warp tile of
// independent mma steps (SIMT arithmetic needs half of kResidentThreads).
constexpr int kTensorCoreThreads = 256;
constexpr double kUncoalesced = 0.25;       // bandwidth share of loads spread over 32 lines
constexpr double kBarrierUs = 0.1;          // one barrier of a SIMT block
constexpr double kCpuThreadStepUs = 0.002;  // one thread of a looped block crossing a tree step
constexpr double kCpuBlockUs = 0.05;        // dispatching one block on a CPU core
constexpr int64_t kRowCacheBytes = 32 * 1024;
// What a later pass over a row still in the cache costs, as a share of a pass from memory.
constexpr double kCachedPassShare = 0.25;

// The flops of a contraction node's terms: 2 per product term (matmul, conv1d); for attention
// the scores' and the values' terms of the keys each row sees, and an exp per score.
double contraction_flops(const GraphView& g, int n) {
    const graph::Node& node = g.node(n);
    if (node.as<op::Conv1d>()) {
        const ops::Conv1dShape c = conv1d_shape(g, n);
        return 2.0 * double(c.batch) * double(c.out_channels) * double(c.out_length()) *
               double(c.in_channels / c.params.groups) * double(c.kernel);
    }
    if (node.as<op::Attention>()) {
        const ops::AttentionShape a = attention_shape(g, n);
        const double keys = node.as<op::Attention>()->causal
                                ? double(a.seq_k) - double(a.seq_q - 1) / 2.0
                                : double(a.seq_k);
        const double scores = double(a.batch) * double(a.heads) * double(a.seq_q) * keys;
        return scores * (4.0 * double(a.head_dim) + graph::info(graph::MapOp::exp).weight);
    }
    const ContractShape c = contract_shape(g, n);
    return 2.0 * double(c.batch) * double(c.m) * double(c.n) * double(c.k);
}

// The share of the device's rate a contraction launch's terms run at, at point s: a SIMT thread
// with more outputs reads each shared value for more of them, and direct points read every term
// from memory (a fifth of the smallest staged share); a CPU runs the point whose threads are the
// lanes of its vectors well and the others as scalar loops.
double contraction_share(const Launch& l, const Schedule& s, const DeviceFacts& f) {
    auto staged_share = [](double tile) { return std::clamp(tile / 64.0, 0.1, 1.0); };
    switch (l.kind) {
        case LaunchKind::conv1d: {
            const ops::Conv1dSchedule& p = ops::conv1d_all_variants().at(size_t(s.variant));
            // A tensor-core point: matmul's tensor-core kernel on the implicit GEMM.
            if (p.tensor_core()) return 2.0 * std::clamp(p.wm * p.wn / 32.0 / 128.0, 0.1, 1.0);
            return f.gpu ? (p.staged ? staged_share(p.tm * p.tn) : 0.02) : (p.spread ? 1.0 : 0.15);
        }
        case LaunchKind::attention: {
            const ops::AttentionSchedule& p = ops::attention_all_variants().at(size_t(s.variant));
            if (!f.gpu) return p.lockstep ? 1.0 : 0.15;
            // A tensor-core point: mma steps for both products, a warp's 16 rows a step.
            if (p.tensor_core()) return 1.0;
            return p.staged ? staged_share(4.0 * p.tq * p.tk) : (p.lockstep ? 0.1 : 0.02);
        }
        default: {
            const ops::MatmulSchedule& p = ops::matmul_all_variants().at(size_t(s.variant));
            // A tensor-core point (CUDA only) reaches about twice the f32 rate with 128 outputs
            // a thread (a 64 x 64 warp tile), which reads each shared pair for the most of them;
            // each further stage of copies in flight hides more of the loads' latency.
            if (p.tensor_core())
                return 2.0 * std::clamp(p.wm * p.wn / 32.0 / 128.0, 0.1, 1.0) *
                       (1.0 + 0.5 * (p.stages - 1));
            // A staged thread reads tm + tn shared values for its tm x tn terms, and a unit
            // reads shared memory at a quarter of its fma rate.
            const double shared_bound = p.tm * p.tn / (4.0 * (p.tm + p.tn));
            return f.gpu ? (p.staged ? std::clamp(shared_bound, 0.1, 1.0) : 0.02)
                         : (p.spread ? 1.0 : 0.15);
        }
    }
}

// What reading one element of a materialized node costs inside a prologue, in flops: its index
// arithmetic and the load's issue.
constexpr double kPrologueReadFlops = 4;

// The flops of one element of operand source `source` computed where it is read (a prologue):
// its maps' weights and kPrologueReadFlops per materialized node it reads.
double prologue_element_flops(const GraphView& g, const std::vector<char>& materialized,
                              int source) {
    double flops = 0;
    for (int n : reach(g, source, [&](int i) { return bool(materialized[size_t(i)]); })) {
        if (materialized[size_t(n)])
            flops += kPrologueReadFlops;
        else if (const auto* m = g.node(n).as<op::Map>())
            flops += graph::info(m->op).weight;
    }
    return flops;
}

// How many times a contraction launch at point s reads each element of its operands (in
// operand order): once per block tile along the other side for a staged point, once per thread
// tile there for a direct one (conv1d's x once more per tap; attention's q once, k and v once
// per block of query rows, or per row where each thread walks the keys alone).
std::vector<double> operand_read_factors(const GraphView& g, const Launch& l, const Schedule& s) {
    auto tiles = [](int64_t extent, int tile) { return double(ceil_div(extent, int64_t{tile})); };
    const int node = l.contraction;
    switch (l.kind) {
        case LaunchKind::conv1d: {
            const ops::Conv1dShape c = conv1d_shape(g, node);
            const ops::Conv1dSchedule& p = ops::conv1d_all_variants().at(size_t(s.variant));
            return {
                tiles(c.out_channels / c.params.groups, p.staged ? p.bm : p.tm) * double(c.kernel),
                tiles(c.out_length(), p.staged ? p.bn : p.tn) * double(c.batch)};
        }
        case LaunchKind::attention: {
            const ops::AttentionShape a = attention_shape(g, node);
            const ops::AttentionSchedule& p = ops::attention_all_variants().at(size_t(s.variant));
            const int64_t kv_heads = a.kv_heads > 0 ? a.kv_heads : a.heads;
            const double per_kv =
                tiles(a.seq_q, p.staged || p.lockstep || p.tensor_core() ? p.rows : 1) *
                double(a.heads) / double(kv_heads);
            return {1.0, per_kv, per_kv};
        }
        default: {
            const ContractShape c = contract_shape(g, node);
            const ops::MatmulSchedule& p = ops::matmul_all_variants().at(size_t(s.variant));
            return {tiles(c.n, p.staged ? p.bn : p.tn), tiles(c.m, p.staged ? p.bm : p.tm)};
        }
    }
}

// The flops a contraction launch's prologues add at point s beyond computing each element once
// (what traffic() counts, as a map launch writing the operand would): every later read of an
// element computes it again.
double prologue_recompute_flops(const GraphView& g, const std::vector<char>& materialized,
                                const Launch& l, const Schedule& s) {
    double flops = 0;
    const std::vector<double> factors = operand_read_factors(g, l, s);
    for (size_t which = 0; which < factors.size(); ++which) {
        const int source = contract_operand(g, materialized, l.contraction, int(which)).source;
        if (materialized[size_t(source)]) continue;
        flops += prologue_element_flops(g, materialized, source) * double(g.node(source).numel()) *
                 (factors[which] - 1);
    }
    return flops;
}

struct Traffic {
    double read = 0, written = 0, flops = 0;
};

Traffic traffic(const GraphView& g, const std::vector<char>& materialized, const Launch& l) {
    Traffic t;
    std::set<int> seen;
    std::vector<int> work;
    for (int o : l.outputs) work.push_back(o);
    for (int s : l.row_steps) work.push_back(s);
    if (l.scatter >= 0) work = g.inputs[size_t(l.scatter)];
    std::set<int> outputs(l.outputs.begin(), l.outputs.end());
    while (!work.empty()) {
        const int n = work.back();
        work.pop_back();
        if (!seen.insert(n).second) continue;
        const graph::Node& node = g.node(n);
        const double bytes = static_cast<double>(node.numel()) * size_of(node.dtype);
        if (materialized[size_t(n)] && !outputs.count(n)) {
            t.read += bytes;
            continue;
        }
        if (const auto* m = node.as<op::Map>()) t.flops += graph::info(m->op).weight * node.numel();
        if (node.as<op::Fold>() && l.kind == LaunchKind::row && l.partials.count(n)) {
            // It folds the segment values a segments launch wrote, not its input.
            const double values = static_cast<double>(l.rows * graph::segment_count(l.extent));
            t.read += values * size_of(node.dtype);
            t.flops += values;
            continue;
        }
        if (node.as<op::Fold>()) t.flops += static_cast<double>(l.rows * l.extent);
        if (is_contraction(node)) t.flops += contraction_flops(g, n);
        for (int in : g.inputs[size_t(n)]) work.push_back(in);
    }
    for (int o : l.outputs)
        t.written += static_cast<double>(g.node(o).numel()) * size_of(g.node(o).dtype);
    return t;
}

int64_t ceil_to(int64_t v, int64_t step) {
    return (v + step - 1) / step * step;
}

bool reduces_innermost(const Launch& l) {
    return !l.axes.empty() && l.axes.back() == static_cast<int>(l.full.size()) - 1;
}

}  // namespace

Estimate estimate(const GraphView& g, const std::vector<char>& materialized, const Launch& l,
                  const Schedule& s, const DeviceFacts& f) {
    const Traffic t = traffic(g, materialized, l);
    Estimate e;
    e.flops = t.flops;
    double passes = 1;
    if (l.kind == LaunchKind::row) {
        // A row is read once per fold and once more for a full-size output; the cached form
        // reads it once. Passes after the first over a row that fits in the cache cost a share
        // of a pass from memory.
        int folds = 0;
        bool full_out = false;
        for (int st : l.row_steps) folds += g.node(st).as<op::Fold>() ? 1 : 0;
        for (int o : l.outputs) full_out = full_out || g.node(o).shape == l.full;
        const int row_passes = std::max(1, folds + (full_out ? 1 : 0));
        const bool fits = static_cast<double>(l.extent) * 4 <= kRowCacheBytes;
        if (!s.cache) {
            passes = 1 + (row_passes - 1) * (fits ? kCachedPassShare : 1.0);
            e.flops *= row_passes;  // the maps feeding a fold run again in every later pass
        }
    }
    e.bytes = t.read * passes + t.written;
    const int64_t grid = grid_of(l, g, s);
    const double units = f.units;
    double bw_eff = 1, rate_eff = 1, extra = 0;
    if (f.gpu) {
        const double resident = std::min<double>(double(grid) * s.block, units * kResidentThreads);
        double in_flight = 4;  // bytes per thread
        if (l.kind == LaunchKind::map) in_flight *= s.per_thread * s.vector;
        // A staged matmul point's thread issues its share of a step's tiles before the barrier.
        if (l.kind == LaunchKind::contract) {
            const ops::MatmulSchedule& p = ops::matmul_all_variants().at(size_t(s.variant));
            if (p.staged)
                in_flight = double(p.bm + p.bn) * p.bk * (p.tensor_core() ? 2 : 4) / p.threads();
        }
        // A row's thread has `unroll` loads in flight; the cached form issues all of its
        // elements' loads before the first fold.
        if (l.kind == LaunchKind::row)
            in_flight *=
                s.cache ? std::min<double>(16, std::ceil(double(l.extent) / s.threads)) : s.unroll;
        bw_eff = std::min(1.0, resident * in_flight / (f.bandwidth * kLatencyUs));
        // Threads a unit needs for its full rate: fewer for tensor cores, and fewer for a staged
        // matmul thread whose tile's independent sums (up to 4) each take a lane's issue slot.
        double needed = kResidentThreads / 2;
        if (l.kind == LaunchKind::contract) {
            const ops::MatmulSchedule& p = ops::matmul_all_variants().at(size_t(s.variant));
            needed = p.tensor_core() ? kTensorCoreThreads
                     : p.staged      ? needed / std::min(p.tm * p.tn, 4)
                                     : needed;
        }
        rate_eff = std::min(1.0, resident / (units * needed));
        if (l.kind == LaunchKind::row) {
            const bool rows_contiguous = reduces_innermost(l);
            if ((s.threads == 1) == rows_contiguous) bw_eff *= kUncoalesced;
            if (s.threads > 32) {
                const double levels = std::log2(s.threads / 32.0) + 1;
                const double rows_at_once = units * kResidentThreads / s.threads;
                extra += static_cast<double>(l.rows) / rows_at_once * levels * kBarrierUs;
            }
        }
    } else {
        // Blocks run in waves over the cores: the share of cores busy on average.
        const double waves = std::ceil(double(grid) / units);
        bw_eff = rate_eff = double(grid) / (waves * units);
        extra += waves * kCpuBlockUs;
        if (l.kind == LaunchKind::row && s.threads > 1)
            extra += static_cast<double>(l.rows) * s.threads * std::log2(double(s.threads)) *
                     kCpuThreadStepUs / units;
    }
    const double memory_us = e.bytes / (f.bandwidth * std::max(bw_eff, 1e-6));
    double compute_us = e.flops / (f.flops * std::max(rate_eff, 1e-6));
    if (l.contraction >= 0) {
        // The terms, including those of outputs a matmul's last tiles compute past the edges,
        // run at the point's share of the rate; the epilogue's flops run as a map's.
        const double terms = contraction_flops(g, l.contraction);
        double padded = terms;
        if (l.kind == LaunchKind::contract) {
            const ContractShape c = contract_shape(g, l.contraction);
            const ops::MatmulSchedule& p = ops::matmul_all_variants().at(size_t(s.variant));
            padded = 2.0 * double(c.batch) * double(ceil_to(c.m, p.bm)) *
                     double(ceil_to(c.n, p.bn)) * double(c.k);
        }
        // A prologue runs again at every later read of its element, beside the terms.
        const double share = contraction_share(l, s, f);
        const double epilogue =
            std::max(0.0, e.flops - terms) + prologue_recompute_flops(g, materialized, l, s);
        e.flops = padded + epilogue;
        compute_us = padded / (f.flops * std::max(rate_eff * share, 1e-6)) +
                     epilogue / (f.flops * std::max(rate_eff, 1e-6));
    }
    double steps_us = 0;
    if (f.gpu && l.kind == LaunchKind::contract) {
        // A staged point's block waits for each k-step's tiles in turn (its prefetch hides one
        // step's loads behind the step before, not more): a latency a step, in waves of the
        // blocks resident at once.
        const ops::MatmulSchedule& p = ops::matmul_all_variants().at(size_t(s.variant));
        if (p.staged) {
            const double resident_blocks = units * std::max(1, kResidentThreads / s.block);
            const double steps = double(ceil_div(contract_shape(g, l.contraction).k, p.bk));
            steps_us = std::ceil(double(grid) / resident_blocks) * steps * kLatencyUs;
        }
    }
    e.us = f.launch_us + std::max({memory_us, compute_us, steps_us}) + extra;
    return e;
}

std::vector<size_t> rank_points(const GraphView& g, const std::vector<char>& materialized,
                                const Launch& l, const DeviceFacts& f) {
    std::vector<double> us;
    for (const auto& s : l.domain) us.push_back(estimate(g, materialized, l, s, f).us);
    std::vector<size_t> order(l.domain.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return us[a] < us[b]; });
    return order;
}

}  // namespace kiln::plan
