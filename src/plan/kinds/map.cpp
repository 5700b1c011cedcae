// The map launch: each thread computes per_thread elements (a grid apart), each a group of
// `vector` consecutive elements read and written with wide loads where the dtype allows; or, on a
// CPU, per_thread rows of the output's last axis, each a loop over its elements (write_map_rows).
#include <fmt/format.h>

#include <numeric>

#include "base/ceil_div.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/launch_writer.hpp"

#include "base/break_switch.hpp"

namespace kiln::plan {

using graph::Node;

void LaunchWriter::write_map() {
    const graph::Shape& shape = g_.node(l_.outputs[0]).shape;
    if (s_.row_loop) {
        write_map_rows();
        return;
    }
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

// The shortest row the row-loop form takes: a vector of f32 on AVX2.
constexpr int64_t kMinLoopedRow = 8;

// The row length of the row-loop form: the greatest common divisor of the last extents (above
// 1) of the output and of every view's input on the way to what the map reads (through maps and
// views), so that an element's reads are affine in its place in a row (a run of the last axis
// that no permute or reshape breaks).
int64_t map_row_length(const Launch& l, const GraphView& g) {
    const graph::Shape& shape = g.node(l.outputs[0]).shape;
    if (shape.empty()) return 0;
    int64_t length = shape.back();
    auto through = [&](int n) {
        return g.node(n).as<graph::op::View>() || g.node(n).as<graph::op::Map>();
    };
    for (int o : l.outputs) {
        if (!through(o)) continue;  // a gather's or a concat's own reads are not views
        for (int n : reach(g, o, [&](int n) { return !through(n); })) {
            if (!g.node(n).as<graph::op::View>()) continue;
            for (int in : g.inputs[size_t(n)]) {  // none where the view is resolved
                const graph::Shape& s = g.node(in).shape;
                if (!s.empty() && s.back() > 1) length = std::gcd(length, s.back());
            }
        }
    }
    return length;
}

}  // namespace

// The row-loop form (a CPU point): the output as rows of map_row_length elements along its last
// axis; each thread takes per_thread consecutive rows and loops over a row's elements. A row's
// coordinates are computed once, so an element's reads are the row's offsets plus its place: a
// permuted or broadcast read is a contiguous (or constant) one in the loop, which g++ vectorizes,
// where the flat form divides each element's index by the extents and gathers.
void LaunchWriter::write_map_rows() {
    const graph::Shape& shape = g_.node(l_.outputs[0]).shape;
    const int64_t length = map_row_length(l_, g_);
    // The rows' space: the output's axes with the last one cut into (last / length, length).
    graph::Shape outer(shape.begin(), shape.end() - 1);
    outer.push_back(shape.back() / length);
    const Expr rows = runtime_count("lead", graph::element_count(outer), shape[0]);
    // The thread's first row in i64, which never wraps. A row is then taken as its min with the
    // last row (the same value under `row < rows`): the range analysis (ir/ranges.hpp) bounds a
    // local by its definition alone, and so bounded the index arithmetic from a row is written
    // unwrapped, affine in the loop's position.
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    Expr thread = wide(k_.block_index()) * int64_t{s_.block} + wide(k_.thread_index());
    Var first = k_.let(thread * int64_t{s_.per_thread}, "first");
    k_.for_(0, s_.per_thread, [&](Expr q) {
        Var wide_row = k_.let(first + wide(q), "row");
        k_.if_(wide_row < wide(rows), [&] {
            Var row =
                k_.let(cast(index_type_, min(wide_row.expr(), wide(rows) - int64_t{1})), "row");
            std::vector<Expr> at = Index(outer, index_type_, row).coords();
            for (Expr& c : at) c = k_.let(c, "at");
            const Expr piece = at.back();  // the row's place along the last axis, in rows
            at.pop_back();
            Var start = k_.let(row * it(length), "start");
            k_.for_(0, length, [&](Expr j) {
                memo_.clear();
                vector_loads_.clear();
                std::vector<Expr> coords = at;
                coords.push_back(length == shape.back() ? as_index(j)
                                                        : piece * it(length) + as_index(j));
                const Expr e = start + as_index(j);
                for (int o : l_.outputs) {
                    Index idx(shape, index_type_, e, coords);
                    idx.run = Index::Run{row, as_index(j), length};
                    buffers_.at(o)[e] = value_at(o, idx);
                }
            });
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
        for (int t : {1, 2, 4, 8})
            d.push_back({.block = cost::kMapBlock, .per_thread = t, .vector = v});
    }
    // The row-loop form (write_map_rows) on a CPU, where a row fills a vector: a thread's rows
    // are about 512 or 2048 elements (the flat points' t2 and t8 blocks).
    const int64_t length = simd_lanes ? map_row_length(l, g) : 0;
    if (out.shape.size() >= 2 && length >= kMinLoopedRow) {
        int last = 0;
        for (int64_t elements : {512, 2048}) {
            const int rows = static_cast<int>(std::max<int64_t>(1, elements / length));
            if (rows == last) continue;
            d.push_back({.block = 1, .per_thread = rows, .row_loop = true});
            last = rows;
        }
    }
    return d;
}

std::string map_point(const Schedule& s) {
    if (s.row_loop) return fmt::format("rows_t{}", s.per_thread);
    return fmt::format("b{}_t{}_v{}", s.block, s.per_thread, s.vector);
}

int64_t map_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    const graph::Node& out = g.node(l.outputs[0]);
    const int64_t E = out.numel();
    if (s.row_loop)
        return std::max<int64_t>(
            1, ceil_div(E / map_row_length(l, g), int64_t{s.block} * s.per_thread));
    return std::max<int64_t>(1, ceil_div(E, int64_t{s.block} * s.per_thread * s.vector));
}

// A CPU core computes a flat point's index maps per element, a row-loop point's once a row.
double map_cpu_extra_us(const Launch& l, const GraphView& g, const Schedule& s,
                        const DeviceFacts& f, bool indexed_reads) {
    const graph::Node& out = g.node(l.outputs[0]);
    const double elements = static_cast<double>(out.numel());
    if (s.row_loop) return elements / double(map_row_length(l, g)) * cost::kCpuRowStartUs / f.units;
    return indexed_reads ? elements * cost::kCpuIndexedElementUs / f.units : 0;
}

bool map_empty(const Launch& l, const GraphView& g) {
    return g.node(l.outputs[0]).numel() == 0;
}

// A SIMT thread has an element of each of its vectors in flight.
double map_simt_bytes_in_flight(const Launch&, const Schedule& s) {
    return 4.0 * (s.per_thread * s.vector);
}

}  // namespace

const KindRules kMapRules{
    "map",
    map_domain,
    map_point,
    map_grid,
    map_empty,
    &LaunchWriter::write_map,
    {.simt_bytes_in_flight = map_simt_bytes_in_flight, .cpu_extra_us = map_cpu_extra_us},
    nullptr,
    nullptr,
    {.merges = true}};

}  // namespace kiln::plan
