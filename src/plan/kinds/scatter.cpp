// The scatter launch: one thread per column of the index tensor adds its sources into the base
// in increasing source order, an index out of range recorded as a fault and skipped.
#include <fmt/format.h>
#include "base/ceil_div.hpp"
#include "plan/kinds/kind.hpp"
#include "plan/launch_writer.hpp"

namespace kiln::plan {

using graph::Node;

void LaunchWriter::write_scatter() {
    const int s = l_.scatter;
    const auto& in = g_.inputs[static_cast<size_t>(s)];
    const auto& sc = *g_.node(s).as<graph::op::ScatterAdd>();
    const graph::Shape& ishape = g_.node(in[1]).shape;
    const auto axis = static_cast<size_t>(sc.axis);
    graph::Shape outer = ishape;
    outer.erase(outer.begin() + static_cast<int64_t>(axis));
    const int64_t columns = graph::element_count(outer);
    Memory out = buffers_.at(s);
    Var col =
        k_.let(as_index(k_.block_index()) * it(s_.block) + as_index(k_.thread_index()), "column");
    k_.if_(col < runtime_size("columns", columns), [&] {
        Index o(outer, index_type_, col);
        const std::vector<Expr> oc = o.coords();
        k_.for_(it(0), it(ishape[axis]), [&](Expr i) {
            memo_.clear();
            std::vector<Expr> coords = oc;
            coords.insert(coords.begin() + static_cast<int64_t>(axis), i);
            Index idx(ishape, index_type_, coords);
            Var value = k_.let(cast(DType::i64, value_at(in[1], idx)), "index");
            Expr bad = value < Expr(int64_t{0}) || value >= Expr(int64_t{g_.node(s).shape[axis]});
            record_fault(s, bad, idx, value);
            k_.if_(!bad, [&] {
                std::vector<Expr> dst = coords;
                dst[axis] = as_index(value);
                Index d(g_.node(s).shape, index_type_, dst);
                Expr at = d.linear();
                out[at] = Expr(out[at]) + value_at(in[2], idx);
            });
        });
    });
}

namespace {

// Blocks of 64, 128 or 256 threads, a thread per column.
std::vector<Schedule> scatter_domain(const Launch&, const GraphView&) {
    std::vector<Schedule> d;
    for (int b : {64, 128, 256}) d.push_back({.block = b});
    return d;
}

std::string scatter_point(const Schedule& s) {
    return fmt::format("b{}", s.block);
}

int64_t scatter_grid(const Launch& l, const GraphView& g, const Schedule& s) {
    const auto& shape = g.node(g.inputs[static_cast<size_t>(l.scatter)][1]).shape;
    const auto axis = static_cast<size_t>(g.node(l.scatter).as<graph::op::ScatterAdd>()->axis);
    return std::max<int64_t>(
        1, ceil_div(graph::element_count(shape) / std::max<int64_t>(shape[axis], 1), s.block));
}

bool scatter_empty(const Launch& l, const GraphView& g) {
    return graph::element_count(g.node(g.inputs[size_t(l.scatter)][1]).shape) == 0;
}

// Every index is checked as it is read.
bool scatter_has_faults(const Launch&, const GraphView&) {
    return true;
}

}  // namespace

const KindRules kScatterRules{"scatter",
                              scatter_domain,
                              scatter_point,
                              scatter_grid,
                              scatter_empty,
                              &LaunchWriter::write_scatter,
                              {},
                              nullptr,
                              scatter_has_faults,
                              {.in_place = true}};

}  // namespace kiln::plan
