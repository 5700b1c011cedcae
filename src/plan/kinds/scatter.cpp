// The scatter launch: one thread per column of the index tensor adds its sources into the base
// in increasing source order, an index out of range recorded as a fault and skipped.
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
    k_.if_(col < it(columns), [&] {
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

}  // namespace kiln::plan
