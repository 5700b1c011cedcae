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
            Expr v = strides[i] == 1 ? *linear_ : *linear_ / index_const(type_, strides[i]);
            if (!outermost) v = v % index_const(type_, shape_[i]);
            outermost = false;
            c.push_back(simplified(v));
        }
        coords_ = std::move(c);
    }
    return *coords_;
}

Index Index::reshaped(const graph::Shape& shape) {
    Index r(shape, type_, linear());
    r.lanes = lanes;
    r.split = split;
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
