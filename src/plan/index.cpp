// Index: linear index <-> coordinates with constant extents, and expression equality.
#include "plan/index.hpp"

#include "ir/simplify.hpp"
#include "kiln/error.hpp"

namespace kiln::plan {

Expr index_const(DType type, int64_t v) {
    return Expr(ir::int_const(type, v));
}

namespace {

Expr simplified(const Expr& e) {
    return Expr(ir::simplify(e.node()));
}

bool same_node(const ir::ExprRef& a, const ir::ExprRef& b) {
    if (a == b) return true;
    if (a->type != b->type || a->node.index() != b->node.index()) return false;
    return std::visit(
        [&](const auto& x) -> bool {
            using N = std::decay_t<decltype(x)>;
            const N& y = std::get<N>(b->node);
            namespace e = ir::expr;
            if constexpr (std::is_same_v<N, e::Const>) {
                return x.i == y.i && (x.f == y.f || (x.f != x.f && y.f != y.f));
            } else if constexpr (std::is_same_v<N, e::Local>) {
                return x.id == y.id;
            } else if constexpr (std::is_same_v<N, e::ScalarParam> ||
                                 std::is_same_v<N, e::BufferLen>) {
                return x.param == y.param;
            } else if constexpr (std::is_same_v<N, e::Load>) {
                return x.mem == y.mem && same_node(x.index, y.index);
            } else if constexpr (std::is_same_v<N, e::Unary>) {
                return x.op == y.op && same_node(x.a, y.a);
            } else if constexpr (std::is_same_v<N, e::Binary>) {
                return x.op == y.op && same_node(x.a, y.a) && same_node(x.b, y.b);
            } else if constexpr (std::is_same_v<N, e::Select>) {
                return same_node(x.cond, y.cond) && same_node(x.a, y.a) && same_node(x.b, y.b);
            } else if constexpr (std::is_same_v<N, e::Cast> || std::is_same_v<N, e::Bitcast>) {
                return same_node(x.a, y.a);
            } else if constexpr (std::is_same_v<N, e::Fma> || std::is_same_v<N, e::Dp4a>) {
                return same_node(x.a, y.a) && same_node(x.b, y.b) && same_node(x.c, y.c);
            } else if constexpr (std::is_same_v<N, e::Builtin>) {
                return x.which == y.which;
            } else if constexpr (std::is_same_v<N, e::InBounds>) {
                return false;  // made only by check_bounds, after planning
            } else {
                return same_node(x.value, y.value) && x.mask == y.mask && x.width == y.width;
            }
        },
        a->node);
}

}  // namespace

bool same_expr(const Expr& a, const Expr& b) {
    return same_node(a.node(), b.node()) ||
           same_node(ir::simplify(a.node()), ir::simplify(b.node()));
}

Index::Index(graph::Shape shape, DType type, Expr linear)
    : shape_(std::move(shape)), type_(type), linear_(std::move(linear)) {}

Index::Index(graph::Shape shape, DType type, std::vector<Expr> coords)
    : shape_(std::move(shape)), type_(type), coords_(std::move(coords)), given_coords_(true) {
    if (coords_->size() != shape_.size())
        fail("internal: an index of {} coordinates for shape {}", coords_->size(),
             graph::to_string(shape_));
}

Index::Index(graph::Shape shape, DType type, Expr linear, std::vector<Expr> coords)
    : Index(std::move(shape), type, std::move(coords)) {
    linear_ = std::move(linear);
}

const Expr& Index::linear() {
    if (!linear_) {
        const auto strides = graph::contiguous_strides(shape_);
        std::optional<Expr> sum;
        for (size_t i = 0; i < shape_.size(); ++i) {
            if (shape_[i] == 1) continue;
            Expr term =
                strides[i] == 1 ? (*coords_)[i] : (*coords_)[i] * index_const(type_, strides[i]);
            sum = sum ? *sum + term : term;
        }
        linear_ = simplified(sum ? *sum : index_const(type_, 0));
    }
    return *linear_;
}

const std::vector<Expr>& Index::coords() {
    if (!coords_) {
        const auto strides = graph::contiguous_strides(shape_);
        std::vector<Expr> c;
        bool outermost = true;  // the first axis of extent > 1 needs no modulo
        for (size_t i = 0; i < shape_.size(); ++i) {
            if (shape_[i] == 1) {
                c.push_back(index_const(type_, 0));
                continue;
            }
            const int64_t stride = strides[i], extent = shape_[i];
            // The axis from what its stride divides: whole rows of a run, a run's offset (where
            // the axis lies inside one run), or else the linear index.
            auto over = [&](const Expr& e, int64_t d) {
                return d == 1 ? e : e / index_const(type_, d);
            };
            const bool by_rows = run && stride % run->length == 0;
            const bool in_run = !by_rows && run && run->length % (stride * extent) == 0;
            Expr v = by_rows  ? over(run->row, stride / run->length)
                     : in_run ? over(run->offset, stride)
                              : over(*linear_, stride);
            const bool whole = outermost || (in_run && stride * extent == run->length);
            if (!whole) v = v % index_const(type_, extent);
            outermost = false;
            c.push_back(simplified(v));
        }
        coords_ = std::move(c);
    }
    return *coords_;
}

namespace {

// The coordinates in `to` of the element at `coords` in `from` (the same number of elements, the
// same row-major layout), axis group by axis group: the axes of extent above 1 on each side are
// cut into the shortest runs whose extents multiply to the same product, so a run of one axis
// on both sides keeps its coordinate, a merge adds, and only a split divides (its own run's
// offset, never the whole linear index). Nothing where an extent is 0.
std::optional<std::vector<Expr>> regrouped(const graph::Shape& from,
                                           const std::vector<Expr>& coords, const graph::Shape& to,
                                           DType type) {
    std::vector<size_t> a, b;  // the axes of extent above 1
    for (size_t i = 0; i < from.size(); ++i) {
        if (from[i] == 0) return std::nullopt;
        if (from[i] > 1) a.push_back(i);
    }
    for (size_t i = 0; i < to.size(); ++i) {
        if (to[i] == 0) return std::nullopt;
        if (to[i] > 1) b.push_back(i);
    }
    std::vector<Expr> out(to.size(), index_const(type, 0));
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const size_t i0 = i, j0 = j;
        int64_t pa = from[a[i++]], pb = to[b[j++]];
        while (pa != pb) {
            if (pa < pb) {
                if (i == a.size()) return std::nullopt;
                pa *= from[a[i++]];
            } else {
                if (j == b.size()) return std::nullopt;
                pb *= to[b[j++]];
            }
        }
        if (i - i0 == 1 && j - j0 == 1) {
            out[b[j0]] = coords[a[i0]];
            continue;
        }
        std::optional<Expr> run;  // the group's offset in its run of pa elements
        for (size_t k = i0; k < i; ++k) {
            const Expr c = coords[a[k]];
            run = run ? *run * index_const(type, from[a[k]]) + c : c;
        }
        int64_t below = pa;  // elements of the group under one step of axis b[k]
        for (size_t k = j0; k < j; ++k) {
            below /= to[b[k]];
            Expr v = below == 1 ? *run : *run / index_const(type, below);
            if (k != j0) v = v % index_const(type, to[b[k]]);
            out[b[k]] = simplified(v);
        }
    }
    if (i != a.size() || j != b.size()) return std::nullopt;
    return out;
}

// Whether every axis of `shape` takes its coordinate from a run's row alone or its offset alone
// (Index::coords), with no division of the linear index.
bool run_divides(const graph::Shape& shape, int64_t length) {
    const auto strides = graph::contiguous_strides(shape);
    for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] > 1 && strides[i] % length != 0 && length % (strides[i] * shape[i]) != 0)
            return false;
    return true;
}

}  // namespace

Index Index::reshaped(const graph::Shape& shape) {
    std::optional<std::vector<Expr>> coords;
    if (given_coords_ && !(run && run_divides(shape, run->length)))
        coords = regrouped(shape_, *coords_, shape, type_);
    Index r = !coords               ? Index(shape, type_, linear())
              : linear_.has_value() ? Index(shape, type_, *linear_, std::move(*coords))
                                    : Index(shape, type_, std::move(*coords));
    r.lanes = lanes;
    r.split = split;
    r.run = run;
    return r;
}

bool same_element(Index& a, Index& b) {
    if (a.shape() == b.shape() && !a.has_linear() && !b.has_linear()) {
        for (size_t i = 0; i < a.coords().size(); ++i)
            if (!same_expr(a.coords()[i], b.coords()[i])) return false;
        return true;
    }
    return same_expr(a.linear(), b.linear());
}

}  // namespace kiln::plan
