// Schedule domains per launch kind.
#include "plan/domain.hpp"

#include <fmt/format.h>

#include "graph/fold_order.hpp"
#include "ops/attention.hpp"
#include "ops/conv1d.hpp"
#include "ops/matmul.hpp"
#include "plan/contract.hpp"

namespace kiln::plan {

const char* name(LaunchKind k) {
    switch (k) {
        case LaunchKind::map:
            return "map";
        case LaunchKind::row:
            return "row";
        case LaunchKind::segments:
            return "segments";
        case LaunchKind::scatter:
            return "scatter";
        case LaunchKind::contract:
            return "contract";
        case LaunchKind::conv1d:
            return "conv1d";
        case LaunchKind::attention:
            return "attention";
    }
    return "?";
}

std::string to_string(LaunchKind kind, const Schedule& s) {
    switch (kind) {
        case LaunchKind::map:
            return fmt::format("b{}_t{}_v{}", s.block, s.per_thread, s.vector);
        case LaunchKind::row:
        case LaunchKind::segments:
            return fmt::format("b{}_r{}{}{}", s.block, s.threads,
                               s.unroll == 1 ? "" : fmt::format("_u{}", s.unroll),
                               s.cache ? "_c" : "");
        case LaunchKind::scatter:
            return fmt::format("b{}", s.block);
        case LaunchKind::contract:
            return ops::matmul_all_variants().at(size_t(s.variant)).name;
        case LaunchKind::conv1d:
            return ops::conv1d_all_variants().at(size_t(s.variant)).name;
        case LaunchKind::attention:
            return ops::attention_all_variants().at(size_t(s.variant)).name;
    }
    return "?";
}

namespace {

// The points of a class's domain that `fits` keeps (a contiguous part of an op's list of every
// point, `all`), as indices into `all`, their threads as the block.
template <typename Point, typename Fits>
void add_points(std::vector<Schedule>& d, std::span<const Point> points,
                const std::vector<Point>& all, const Fits& fits) {
    const size_t first = size_t(points.data() - all.data());
    for (size_t v = 0; v < points.size(); ++v)
        if (fits(points[v])) d.push_back({.block = points[v].threads(), .variant = int(first + v)});
}

}  // namespace

std::vector<Schedule> domain_of(const Launch& l, const GraphView& g) {
    std::vector<Schedule> d;
    switch (l.kind) {
        case LaunchKind::map: {
            const int64_t E = g.node(l.outputs[0]).numel();
            for (int v : {1, 4}) {
                if (v == 4 && E % 4 != 0) continue;
                for (int t : {1, 2, 4, 8})
                    d.push_back({.block = 256, .per_thread = t, .vector = v});
            }
            break;
        }
        case LaunchKind::row:
        case LaunchKind::segments: {
            // The fold's outermost level: the segments' values in a row launch after a segments
            // launch, a segment (256 lanes) in a segments launch.
            const int64_t n = l.partials.empty() ? l.extent : graph::segment_count(l.extent);
            const int W = l.kind == LaunchKind::segments || graph::segmented(n)
                              ? graph::kSegmentLanes
                              : graph::level_lanes(n);
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
            if (l.kind == LaunchKind::row && l.partials.empty() && !graph::segmented(n) &&
                W >= 32 && n <= int64_t{64} * W) {
                d.push_back({.block = W, .threads = W, .cache = true});
                if (W < 256) d.push_back({.block = 256, .threads = W, .cache = true});
            }
            break;
        }
        case LaunchKind::scatter:
            for (int b : {64, 128, 256}) d.push_back({.block = b});
            break;
        case LaunchKind::contract: {
            // Each contraction: its class's points on its device (ops::*_domain).
            const graph::Node& mm = g.node(l.contraction);
            add_points(d, ops::matmul_domain(*mm.device, mm.as<graph::op::Matmul>()->arithmetic),
                       ops::matmul_all_variants(), [](const auto&) { return true; });
            break;
        }
        case LaunchKind::conv1d: {
            const graph::Node& c = g.node(l.contraction);
            add_points(d, ops::conv1d_domain(*c.device, c.as<graph::op::Conv1d>()->arithmetic),
                       ops::conv1d_all_variants(), [](const auto&) { return true; });
            break;
        }
        case LaunchKind::attention: {
            // Points whose shared tiles do not fit for this head_dim are left out.
            const int D = static_cast<int>(attention_shape(g, l.contraction).head_dim);
            const graph::Node& a = g.node(l.contraction);
            add_points(
                d,
                ops::attention_domain(*a.device, attention_options(g, l.contraction).arithmetic, D),
                ops::attention_all_variants(),
                [D](const auto& p) { return ops::attention_fits(p, D); });
            break;
        }
    }
    return d;
}

}  // namespace kiln::plan
