// read_index: the element of each input a view, concat or gather reads, a row launch's element
// index and a launch's index type (read_index.hpp).
#include "plan/read_index.hpp"

#include <algorithm>
#include <bit>
#include <climits>

#include "kiln/error.hpp"
#include "plan/resolve.hpp"

namespace kiln::plan {

namespace {

// The largest element count any node the launch touches has: it decides the index type.
int64_t largest_extent(const GraphView& g, const Launch& l) {
    return std::max(l.rows * std::max<int64_t>(l.extent, 1), g.most_elements);
}

// An expand's input at element idx of its output. The trailing axes the expand keeps (each of
// the input's extent in the output too) are one contiguous run in both, of `inner` elements: where
// the output's linear index v is known, the input's index over them is v % inner, one modulo
// instead of a division and a modulo per axis, and the axes before the run take their
// coordinates as before. A vector group of the output (Index::Lanes, width dividing inner) then
// reads `width` consecutive input elements too: its lanes carry over, from the input's index of
// the group's first element. Where the coordinates were given (a contraction's store knows its
// row and column), the input's are taken from them: no division at all.
Index expand_read(const graph::Shape& in_shape, Index& idx) {
    const DType type = idx.type();
    auto it = [&](int64_t c) { return index_const(type, c); };
    const size_t offset = idx.shape().size() - in_shape.size();
    const auto [keep, inner] = kept_run(in_shape, idx.shape());
    if (!idx.has_linear() || inner <= 1 || (idx.given_coords() && !idx.lanes && !idx.split)) {
        std::vector<Expr> out;
        for (size_t j = 0; j < in_shape.size(); ++j)
            out.push_back(in_shape[j] == 1 ? it(0) : idx.coords()[j + offset]);
        return Index(in_shape, type, out);
    }
    const auto strides = graph::contiguous_strides(in_shape);
    const int64_t total = graph::element_count(idx.shape());
    // The input's linear index of output element `at` (its linear index v, its coordinates).
    auto linear_of = [&](Index& at) {
        Expr sum = inner == total ? at.linear() : at.linear() % it(inner);
        for (size_t j = keep; j-- > 0;)
            if (in_shape[j] != 1) sum = at.coords()[j + offset] * it(strides[j]) + sum;
        return sum;
    };
    std::optional<Index> r;
    if (idx.split && inner % idx.split->span == 0) {
        // The block's elements lie in one run of the kept axes: a uniform index plus the
        // thread's offset, a multiple of span again.
        Index first(idx.shape(), type, idx.split->base);
        Expr base = linear_of(first);
        r.emplace(in_shape, type, base + idx.split->offset);
        r->split = Index::Split{base, idx.split->offset, idx.split->span};
    } else {
        r.emplace(in_shape, type, linear_of(idx));
    }
    if (idx.lanes && inner % idx.lanes->width == 0) {
        Index first(idx.shape(), type, idx.lanes->base);
        r->lanes = Index::Lanes{linear_of(first), idx.lanes->lane, idx.lanes->width};
    }
    return *r;
}

}  // namespace

KeptRun kept_run(const graph::Shape& in, const graph::Shape& out) {
    const size_t offset = out.size() - in.size();
    KeptRun r{in.size(), 1};
    while (r.first > 0 && in[r.first - 1] == out[r.first - 1 + offset]) r.elements *= in[--r.first];
    return r;
}

Expr as_index(DType type, const Expr& e) {
    return e.type() == type ? e : cast(type, e);
}

int64_t size_bucket(int64_t size) {
    return size <= 0 ? 0 : static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(size)));
}

DType index_type_of(const GraphView& g, const Launch& l, const Schedule& s) {
    return options().wide_index || size_bucket(largest_extent(g, l)) +
                                           int64_t{s.block} * s.per_thread * s.vector * 4 >=
                                       int64_t{INT32_MAX}
               ? DType::i64
               : DType::i32;
}

ViewRead view_read(const GraphView& g, int n, const graph::op::View& v, Index& idx) {
    const int in = g.inputs[static_cast<size_t>(n)][0];
    const graph::Shape& in_shape = g.node(in).shape;
    const DType type = idx.type();
    auto it = [&](int64_t c) { return index_const(type, c); };
    switch (v.kind) {
        case graph::ViewKind::reshape:
            return {idx.reshaped(in_shape), std::nullopt};
        case graph::ViewKind::permute: {
            std::vector<Expr> out(in_shape.size(), it(0));
            for (size_t i = 0; i < v.a.size(); ++i)
                out[static_cast<size_t>(v.a[i])] = idx.coords()[i];
            return {Index(in_shape, type, out), std::nullopt};
        }
        case graph::ViewKind::expand:
            return {expand_read(in_shape, idx), std::nullopt};
        case graph::ViewKind::slice: {
            std::vector<Expr> out;
            for (size_t j = 0; j < in_shape.size(); ++j) {
                Expr e = idx.coords()[j];
                if (v.b[j] != 1) e = e * it(v.b[j]);
                if (v.a[j] != 0) e = e + it(v.a[j]);
                out.push_back(e);
            }
            return {Index(in_shape, type, out), std::nullopt};
        }
        case graph::ViewKind::pad: {
            std::vector<Expr> out;
            std::optional<Expr> inside;
            for (size_t j = 0; j < in_shape.size(); ++j) {
                Expr e = idx.coords()[j];
                if (v.a[j] == 0 && v.b[j] == 0) {
                    out.push_back(e);
                    continue;
                }
                if (v.a[j] != 0) e = e - it(v.a[j]);
                Expr ok = e >= it(0) && e < it(in_shape[j]);
                inside = inside ? *inside && ok : ok;
                // Clamped, so the load stays in range whichever value is kept.
                out.push_back(min(max(e, it(0)), it(std::max<int64_t>(in_shape[j] - 1, 0))));
            }
            return {Index(in_shape, type, out), inside};
        }
    }
    fail("internal: unknown view");
}

std::vector<ConcatRead> concat_reads(const GraphView& g, int n, const graph::op::Concat& c,
                                     Index& idx) {
    const auto& in = g.inputs[static_cast<size_t>(n)];
    const auto axis = static_cast<size_t>(c.axis);
    const DType type = idx.type();
    auto it = [&](int64_t v) { return index_const(type, v); };
    const Expr at = idx.coords()[axis];
    std::vector<ConcatRead> parts;
    int64_t end = g.node(n).shape[axis];
    for (size_t k = in.size(); k-- > 0;) {
        const graph::Shape& shape = g.node(in[k]).shape;
        const int64_t begin = end - shape[axis];
        std::vector<Expr> coords = idx.coords();
        coords[axis] = min(max(at - it(begin), it(0)), it(std::max<int64_t>(shape[axis] - 1, 0)));
        if (shape[axis] > 0) parts.push_back({in[k], Index(shape, type, coords), end});
        end = begin;
    }
    return parts;
}

Index gather_index_at(const GraphView& g, int n, const graph::op::Gather& gt, Index& idx) {
    const auto& in = g.inputs[static_cast<size_t>(n)];
    const auto axis = static_cast<size_t>(gt.axis);
    return gt.select ? Index(g.node(in[1]).shape, idx.type(), std::vector<Expr>{idx.coords()[axis]})
                     : Index(idx.shape(), idx.type(), idx.coords());
}

Index gather_source_at(const GraphView& g, int n, const graph::op::Gather& gt, Index& idx,
                       const Expr& position) {
    const auto& in = g.inputs[static_cast<size_t>(n)];
    std::vector<Expr> coords = idx.coords();
    coords[static_cast<size_t>(gt.axis)] = position;
    return Index(g.node(in[0]).shape, idx.type(), coords);
}

Index row_element(const Launch& l, DType type, const Expr& row, const Expr& i) {
    auto is_reduced = [&](size_t axis) {
        return std::find(l.axes.begin(), l.axes.end(), static_cast<int>(axis)) != l.axes.end();
    };
    const size_t rank = l.full.size();
    graph::Shape outer, inner;
    for (size_t a = 0; a < rank; ++a) (is_reduced(a) ? inner : outer).push_back(l.full[a]);
    Index o(outer, type, row), r(inner, type, as_index(type, i));
    std::vector<Expr> coords;
    size_t oi = 0, ri = 0;
    for (size_t a = 0; a < rank; ++a)
        coords.push_back(is_reduced(a) ? r.coords()[ri++] : o.coords()[oi++]);
    const bool trailing =
        l.axes.empty() || (l.axes.back() == static_cast<int>(rank) - 1 &&
                           l.axes.front() == static_cast<int>(rank - l.axes.size()));
    if (trailing)
        return Index(l.full, type, row * index_const(type, l.extent) + as_index(type, i), coords);
    return Index(l.full, type, coords);
}

}  // namespace kiln::plan
