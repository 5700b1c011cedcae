// roofline: estimated time of a launch at a schedule point (see roofline.hpp for the model).
#include "plan/roofline.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>

#include "plan/contract.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/lower_launch.hpp"
#include "plan/partition.hpp"
#include "plan/read_index.hpp"

namespace kiln::plan {

namespace op = graph::op;

namespace {

using namespace cost;

const ContractionCost& contraction_cost(const Launch& l) {
    return *rules(l.kind).cost.contraction;
}

// What reading one element of a materialized node costs inside a prologue, in flops: its index
// arithmetic and the load's issue.
constexpr double kPrologueReadFlops = 4;

// The arithmetic of one element of a generator, in the map table's simple operations
// (plan/map_ops.cpp's formulas): arange a multiply and an add; rand one hashed stream (two
// 32-bit mixes) and its scaling; randn two streams, a log and a cosine (transcendentals, about
// twenty each), a square root and the scaling.
double generator_flops(graph::op::GenerateKind kind) {
    switch (kind) {
        case graph::op::GenerateKind::arange:
            return 2;
        case graph::op::GenerateKind::rand:
            return 20;
        case graph::op::GenerateKind::randn:
            return 2 * 17 + 2 * 20 + 8;
    }
    return 0;
}

// A node's arithmetic per element where a launch computes it (maps and generators; folds and
// contractions are counted by their launch's kind).
double element_flops(const graph::Node& node) {
    if (const auto* m = node.as<op::Map>()) return graph::info(m->op).weight;
    if (const auto* gen = node.as<op::Generate>()) return generator_flops(gen->kind);
    return 0;
}

// The flops of one element of operand source `source` computed where it is read (a prologue):
// its maps' weights and kPrologueReadFlops per materialized node it reads.
double prologue_element_flops(const GraphView& g, const std::vector<char>& materialized,
                              int source) {
    double flops = 0;
    for (int n : reach(g, source, [&](int i) { return bool(materialized[size_t(i)]); })) {
        flops += materialized[size_t(n)] ? kPrologueReadFlops : element_flops(g.node(n));
    }
    return flops;
}

// Whether a view reads its input through an index map that a flat map's threads do not read
// contiguously: a permute, slice or pad, or a broadcast whose kept trailing run is not a multiple
// of a map block (where it is, a block reads the run at a uniform base plus the thread's offset:
// Index::Split).
bool index_mapped(const graph::op::View& v, const graph::Shape& in, const graph::Shape& out) {
    if (v.kind == graph::ViewKind::reshape) return false;
    if (v.kind != graph::ViewKind::expand) return true;
    return kept_run(in, out).elements % kMapBlock != 0;
}

struct Traffic {
    double read = 0, written = 0, flops = 0;
    // Some element is read through an index map: a permute, broadcast, slice or pad view, a
    // concat or a gather computed in the launch.
    bool indexed_reads = false;
};

// What a launch's estimate takes from the graph, the same at every point of its domain: its
// traffic and, for a contraction, each operand's prologue flops over all of its elements (none
// where the operand is read from memory).
struct LaunchTerms {
    Traffic traffic;
    std::vector<std::optional<double>> prologue;  // by operand
};

// The flops a contraction launch's prologues add at point s beyond computing each element once
// (what traffic() counts, as a map launch writing the operand would): every later read of an
// element computes it again.
double prologue_recompute_flops(const GraphView& g, const Launch& l, const Schedule& s,
                                const LaunchTerms& terms) {
    double flops = 0;
    const std::vector<double> factors = contraction_cost(l).operand_reads(g, l.contraction, s);
    for (size_t which = 0; which < factors.size(); ++which) {
        const std::optional<double>& elements = terms.prologue.at(which);
        if (!elements) continue;
        flops += *elements * (factors[which] - 1);
    }
    return flops;
}

// The bytes of the scratch of node n's partials in launch l.
double partial_bytes(const GraphView& g, const Launch& l, int n) {
    const auto [dtype, count] = partial_scratch(g, l, n);
    return static_cast<double>(count) * size_of(dtype);
}

Traffic traffic(const GraphView& g, const std::vector<char>& materialized, const Launch& l) {
    Traffic t;
    std::set<int> seen;
    std::vector<int> work;
    for (int o : l.outputs) work.push_back(o);
    for (int s : l.row_steps) work.push_back(s);
    // A launch writing only partials (contract_chunks) computes its contraction.
    if (l.contraction >= 0) work.push_back(l.contraction);
    if (l.scatter >= 0) work = g.inputs[size_t(l.scatter)];
    std::set<int> outputs(l.outputs.begin(), l.outputs.end());
    while (!work.empty()) {
        const int n = work.back();
        work.pop_back();
        if (!seen.insert(n).second) continue;
        const graph::Node& node = g.node(n);
        const double bytes = static_cast<double>(node.numel()) * size_of(node.dtype);
        if (materialized[size_t(n)] && !outputs.count(n) && n != l.contraction) {
            t.read += bytes;
            continue;
        }
        t.flops += element_flops(node) * static_cast<double>(node.numel());
        if (const auto* v = node.as<graph::op::View>())
            for (int in : g.inputs[size_t(n)])
                t.indexed_reads |= index_mapped(*v, g.node(in).shape, node.shape);
        if (node.as<graph::op::Concat>() || node.as<graph::op::Gather>()) t.indexed_reads = true;
        if (rules(l.kind).cost.folds_partials && l.partials.count(n)) {
            // It folds the segment values (chunk sums) a launch before wrote, not its input.
            t.read += partial_bytes(g, l, n);
            t.flops += static_cast<double>(partial_scratch(g, l, n).second);
            continue;
        }
        if (node.as<op::Fold>()) t.flops += static_cast<double>(l.rows * l.extent);
        // A launch holds one contraction, its own.
        if (is_contraction(node)) t.flops += contraction_cost(l).flops(g, n);
        for (int in : g.inputs[size_t(n)]) work.push_back(in);
    }
    for (int o : l.outputs)
        t.written += static_cast<double>(g.node(o).numel()) * size_of(g.node(o).dtype);
    if (rules(l.kind).order.writes_partials)
        for (const auto& [n, scratch] : l.partials) t.written += partial_bytes(g, l, n);
    return t;
}

LaunchTerms terms_of(const GraphView& g, const std::vector<char>& materialized, const Launch& l) {
    LaunchTerms terms{traffic(g, materialized, l), {}};
    if (l.contraction < 0 || !rules(l.kind).cost.contraction) return terms;
    for (size_t which = 0; which < g.inputs[size_t(l.contraction)].size(); ++which) {
        const int source = contract_operand(g, materialized, l.contraction, int(which)).source;
        terms.prologue.push_back(
            materialized[size_t(source)]
                ? std::nullopt
                : std::optional<double>(prologue_element_flops(g, materialized, source) *
                                        double(g.node(source).numel())));
    }
    return terms;
}

Estimate estimate_with(const GraphView& g, const Launch& l, const Schedule& s, const DeviceFacts& f,
                       const LaunchTerms& launch_terms) {
    const KindCost& kind = rules(l.kind).cost;
    const Traffic& t = launch_terms.traffic;
    Estimate e;
    e.flops = t.flops;
    const Passes passes = kind.passes ? kind.passes(l, g, s) : Passes{};
    e.flops *= passes.flops;
    e.bytes = t.read * passes.reads + t.written;
    const int64_t grid = grid_of(l, g, s);
    const double units = f.units;
    double bw_eff = 1, rate_eff = 1, extra = 0;
    if (f.gpu) {
        const double resident = std::min<double>(double(grid) * s.block, units * kResidentThreads);
        const double in_flight = kind.simt_bytes_in_flight ? kind.simt_bytes_in_flight(l, s) : 4;
        bw_eff = std::min(1.0, resident * in_flight / (f.bandwidth * kLatencyUs));
        const double needed =
            kind.simt_threads_needed ? kind.simt_threads_needed(s) : kResidentThreads / 2;
        rate_eff = std::min(1.0, resident / (units * needed));
        if (kind.simt_bandwidth_share) bw_eff *= kind.simt_bandwidth_share(l, s);
        if (kind.simt_extra_us) extra += kind.simt_extra_us(l, s, f);
    } else {
        // Blocks run in waves over the cores: the share of cores busy on average.
        const double waves = std::ceil(double(grid) / units);
        bw_eff = rate_eff = double(grid) / (waves * units);
        extra += waves * kCpuBlockUs;
        if (kind.cpu_extra_us) extra += kind.cpu_extra_us(l, g, s, f, t.indexed_reads);
    }
    const double memory_us = e.bytes / (f.bandwidth * std::max(bw_eff, 1e-6));
    double compute_us = e.flops / (f.flops * std::max(rate_eff, 1e-6));
    double steps_us = 0;
    if (l.contraction >= 0 && kind.contraction) {
        // The terms, including those of outputs the last tiles compute past the edges, run at
        // the point's share of the rate; the epilogue's flops run as a map's.
        const ContractionCost& c = *kind.contraction;
        const double terms = c.flops(g, l.contraction);
        const double padded = c.padded_flops ? c.padded_flops(g, l.contraction, s) : terms;
        // A prologue runs again at every later read of its element, beside the terms.
        const double share = c.rate_share(s, f);
        const double epilogue =
            std::max(0.0, e.flops - terms) + prologue_recompute_flops(g, l, s, launch_terms);
        e.flops = padded + epilogue;
        compute_us = padded / (f.flops * std::max(rate_eff * share, 1e-6)) +
                     epilogue / (f.flops * std::max(rate_eff, 1e-6));
        if (f.gpu && c.simt_steps_us) steps_us = c.simt_steps_us(g, l.contraction, s, grid, f);
    }
    e.us = f.launch_us + std::max({memory_us, compute_us, steps_us}) + extra;
    return e;
}

}  // namespace

Estimate estimate(const GraphView& g, const std::vector<char>& materialized, const Launch& l,
                  const Schedule& s, const DeviceFacts& f) {
    return estimate_with(g, l, s, f, terms_of(g, materialized, l));
}

std::vector<size_t> rank_points(const GraphView& g, const std::vector<char>& materialized,
                                const Launch& l, const DeviceFacts& f) {
    const LaunchTerms terms = terms_of(g, materialized, l);
    std::vector<double> us;
    for (const auto& s : l.domain) us.push_back(estimate_with(g, l, s, f, terms).us);
    std::vector<size_t> order(l.domain.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return us[a] < us[b]; });
    return order;
}

}  // namespace kiln::plan
