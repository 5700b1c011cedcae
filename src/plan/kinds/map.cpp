// The map launch: each thread computes per_thread elements (a grid apart), each a group of
// `vector` consecutive elements read and written with wide loads where the dtype allows.
#include <fmt/format.h>
#include "base/ceil_div.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/launch_writer.hpp"

#include "base/break_switch.hpp"

namespace kiln::plan {

using graph::Node;

void LaunchWriter::write_map() {
    const graph::Shape& shape = g_.node(l_.outputs[0]).shape;
    // The element count (the leading extent, a runtime size, times the rest) and the grid are
    // runtime values: a launch of this structure at another leading extent is the same kernel.
    const Expr E = runtime_count("lead", graph::element_count(shape), shape.empty() ? 1 : shape[0]);
    const int V = s_.vector;
    Expr gid = as_index(k_.block_index()) * it(s_.block) + as_index(k_.thread_index());
    k_.unroll(0, s_.per_thread, [&](Expr q) {
        int64_t qv = 0;
        ir::is_const(q.node(), &qv);
        if (qv > 0 && break_switch("map_tiling")) return;  // tests of the sweep
        Expr first = qv ? gid + as_index(k_.grid_size()) * it(qv * s_.block) : gid;
        if (V > 1) first = first * it(V);
        // The block's first element of this step, and the thread's offset from it.
        Expr block_first = as_index(k_.block_index()) * it(s_.block);
        if (qv) block_first = block_first + as_index(k_.grid_size()) * it(qv * s_.block);
        if (V > 1) block_first = block_first * it(V);
        const Expr offset = as_index(k_.thread_index()) * it(V);
        auto split = [&](Index idx, int lane) {
            idx.split =
                Index::Split{block_first, lane ? offset + it(lane) : offset, int64_t{s_.block} * V};
            return idx;
        };
        Var e = k_.let(first, "e");
        k_.if_(e < E, [&] {
            memo_.clear();
            vector_loads_.clear();
            if (V == 1) {
                for (int o : l_.outputs) {
                    Expr v = value_at(o, split(Index(shape, index_type_, e), 0));
                    buffers_.at(o)[e] = v;
                }
                return;
            }
            for (int o : l_.outputs) {
                std::vector<Expr> lanes;
                for (int lane = 0; lane < V; ++lane) {
                    Index idx(shape, index_type_, lane ? e + it(lane) : Expr(e));
                    idx.lanes = Index::Lanes{e, lane, V};
                    lanes.push_back(value_at(o, split(idx, lane)));
                }
                const Memory out = buffers_.at(o);
                if (size_of(g_.node(o).dtype) == 4)
                    k_.store_vector(out, e, lanes);
                else
                    for (int lane = 0; lane < V; ++lane)
                        out[lane ? e + it(lane) : Expr(e)] = lanes[static_cast<size_t>(lane)];
            }
        });
    });
}

namespace {

// 256 threads a block x elements per thread {1, 2, 4, 8} (a grid apart, so a block's threads
// stay on consecutive elements) x vector width {1, 4} (4 where the element count is a multiple
// of 4: consecutive elements per thread, one wide access where a buffer is read or written
// contiguously). Not 4 on a CPU: there a block's consecutive threads already run as the lanes of
// one vector, and a thread's own group of 4 makes each lane's accesses a strided group that g++
// does not vectorize under the block's bounds test (1.3x to 4.4x the time of width 1,
// notes/cpu-map-vectors-2026-12-06.md).
std::vector<Schedule> map_domain(const Launch& l, const GraphView& g) {
    std::vector<Schedule> d;
    const graph::Node& out = g.node(l.outputs[0]);
    const int64_t E = out.numel();
    const bool simd_lanes = out.device != nullptr && out.device->info().backend == Backend::cpu;
    for (int v : {1, 4}) {
        if (v == 4 && (E % 4 != 0 || simd_lanes)) continue;
        for (int t : {1, 2, 4, 8}) d.push_back({.block = 256, .per_thread = t, .vector = v});
    }
    return d;
}

std::string map_point(const Schedule& s) {
    return fmt::format("b{}_t{}_v{}", s.block, s.per_thread, s.vector);
}

int64_t map_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    const int64_t E = g.node(l.outputs[0]).numel();
    return std::max<int64_t>(1, ceil_div(E, int64_t{s.block} * s.per_thread * s.vector));
}

bool map_empty(const Launch& l, const GraphView& g) {
    return g.node(l.outputs[0]).numel() == 0;
}

// A SIMT thread has an element of each of its vectors in flight.
double map_simt_bytes_in_flight(const Launch&, const Schedule& s) {
    return 4.0 * (s.per_thread * s.vector);
}

}  // namespace

const KindRules kMapRules{"map",
                          map_domain,
                          map_point,
                          map_grid,
                          map_empty,
                          &LaunchWriter::write_map,
                          {.simt_bytes_in_flight = map_simt_bytes_in_flight},
                          nullptr,
                          nullptr,
                          {.merges = true}};

}  // namespace kiln::plan
