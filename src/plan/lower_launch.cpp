// lower_launch: the dispatch of a launch to its kind's writer (launch_writer.hpp,
// src/plan/kinds/), and each kind's grid and emptiness.
#include "plan/lower_launch.hpp"

#include <algorithm>

#include "base/ceil_div.hpp"
#include "graph/fold_order.hpp"
#include "ops/attention.hpp"
#include "ops/conv1d.hpp"
#include "ops/matmul.hpp"
#include "plan/contract.hpp"
#include "plan/launch_writer.hpp"

namespace kiln::plan {

bool is_empty(const Launch& l, const GraphView& g) {
    switch (l.kind) {
        case LaunchKind::map:
            return g.node(l.outputs[0]).numel() == 0;
        case LaunchKind::row:
        case LaunchKind::segments:
            return l.rows == 0;
        case LaunchKind::scatter:
            return graph::element_count(g.node(g.inputs[size_t(l.scatter)][1]).shape) == 0;
        case LaunchKind::contract:
        case LaunchKind::conv1d:
        case LaunchKind::attention:
            return g.node(l.contraction).numel() == 0;
    }
    return false;
}

int64_t grid_of(const Launch& l, const GraphView& g, const Schedule& s) {
    switch (l.kind) {
        case LaunchKind::map: {
            const int64_t E = g.node(l.outputs[0]).numel();
            return std::max<int64_t>(1, ceil_div(E, int64_t{s.block} * s.per_thread * s.vector));
        }
        case LaunchKind::row:
            return std::max<int64_t>(1, ceil_div(l.rows, s.block / s.threads));
        case LaunchKind::segments:
            return std::max<int64_t>(
                1, ceil_div(l.rows * graph::segment_count(l.extent), s.block / s.threads));
        case LaunchKind::scatter: {
            const auto& shape = g.node(g.inputs[static_cast<size_t>(l.scatter)][1]).shape;
            const auto axis =
                static_cast<size_t>(g.node(l.scatter).as<graph::op::ScatterAdd>()->axis);
            return std::max<int64_t>(
                1,
                ceil_div(graph::element_count(shape) / std::max<int64_t>(shape[axis], 1), s.block));
        }
        case LaunchKind::contract: {
            const ContractShape sh = contract_shape(g, l.contraction);
            return std::max<int64_t>(
                1, ops::matmul_grid({sh.batch, sh.m, sh.n, sh.k},
                                    ops::matmul_all_variants().at(size_t(s.variant))));
        }
        case LaunchKind::conv1d:
            return std::max<int64_t>(
                1, ops::conv1d_grid(conv1d_shape(g, l.contraction),
                                    ops::conv1d_all_variants().at(size_t(s.variant))));
        case LaunchKind::attention:
            return std::max<int64_t>(
                1, ops::attention_grid(attention_shape(g, l.contraction),
                                       ops::attention_all_variants().at(size_t(s.variant))));
    }
    return 1;
}

LoweredLaunch lower_launch(const GraphView& g, const std::vector<char>& materialized,
                           const Launch& launch, const Schedule& s) {
    return LaunchWriter(g, materialized, launch, s).lower();
}

}  // namespace kiln::plan
