// IR walking and rebuilding helpers.
#include "ir/visit.hpp"

namespace kiln::ir {

void for_each_child(const ExprRef& e, const std::function<void(const ExprRef&)>& f) {
    std::visit(
        [&](const auto& n) {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, expr::Load>)
                f(n.index);
            else if constexpr (std::is_same_v<N, expr::Unary>)
                f(n.a);
            else if constexpr (std::is_same_v<N, expr::Binary>) {
                f(n.a);
                f(n.b);
            } else if constexpr (std::is_same_v<N, expr::Select>) {
                f(n.cond);
                f(n.a);
                f(n.b);
            } else if constexpr (std::is_same_v<N, expr::Cast> || std::is_same_v<N, expr::Bitcast>)
                f(n.a);
            else if constexpr (std::is_same_v<N, expr::Fma>) {
                f(n.a);
                f(n.b);
                f(n.c);
            } else if constexpr (std::is_same_v<N, expr::ShuffleXor>)
                f(n.value);
            else if constexpr (std::is_same_v<N, expr::Dp4a>) {
                f(n.a);
                f(n.b);
                f(n.c);
            }
        },
        e->node);
}

void walk(const ExprRef& e, const std::function<void(const ExprRef&)>& f) {
    for_each_child(e, [&](const ExprRef& c) { walk(c, f); });
    f(e);
}

ExprRef rewrite(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& f) {
    auto r = [&](const ExprRef& c) { return rewrite(c, f); };
    ExprRef rebuilt = std::visit(
        [&](const auto& n) -> ExprRef {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, expr::Load>) {
                auto i = r(n.index);
                return i == n.index ? e : make(e->type, expr::Load{n.mem, i});
            } else if constexpr (std::is_same_v<N, expr::Unary>) {
                auto a = r(n.a);
                return a == n.a ? e : make(e->type, expr::Unary{n.op, a});
            } else if constexpr (std::is_same_v<N, expr::Binary>) {
                auto a = r(n.a), b = r(n.b);
                return a == n.a && b == n.b ? e : make(e->type, expr::Binary{n.op, a, b});
            } else if constexpr (std::is_same_v<N, expr::Select>) {
                auto c = r(n.cond), a = r(n.a), b = r(n.b);
                return c == n.cond && a == n.a && b == n.b ? e
                                                           : make(e->type, expr::Select{c, a, b});
            } else if constexpr (std::is_same_v<N, expr::Cast>) {
                auto a = r(n.a);
                return a == n.a ? e : make(e->type, expr::Cast{a});
            } else if constexpr (std::is_same_v<N, expr::Bitcast>) {
                auto a = r(n.a);
                return a == n.a ? e : make(e->type, expr::Bitcast{a});
            } else if constexpr (std::is_same_v<N, expr::Fma>) {
                auto a = r(n.a), b = r(n.b), c = r(n.c);
                return a == n.a && b == n.b && c == n.c ? e : make(e->type, expr::Fma{a, b, c});
            } else if constexpr (std::is_same_v<N, expr::Dp4a>) {
                auto a = r(n.a), b = r(n.b), c = r(n.c);
                return a == n.a && b == n.b && c == n.c ? e : make(e->type, expr::Dp4a{a, b, c});
            } else if constexpr (std::is_same_v<N, expr::ShuffleXor>) {
                auto v = r(n.value);
                return v == n.value ? e : make(e->type, expr::ShuffleXor{v, n.mask, n.width});
            } else {
                return e;
            }
        },
        e->node);
    return f(rebuilt);
}

StmtRef rewrite_exprs(const StmtRef& s, const std::function<ExprRef(const ExprRef&)>& f) {
    if (!s) return s;
    auto x = [&](const ExprRef& e) { return e ? rewrite(e, f) : e; };
    auto st = [&](const StmtRef& b) { return rewrite_exprs(b, f); };
    return std::visit(
        [&](const auto& n) -> StmtRef {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, stmt::Seq>) {
                std::vector<StmtRef> items;
                for (const auto& i : n.items) items.push_back(st(i));
                return make(stmt::Seq{std::move(items)});
            } else if constexpr (std::is_same_v<N, stmt::Let>) {
                return make(stmt::Let{n.local, x(n.value)});
            } else if constexpr (std::is_same_v<N, stmt::Assign>) {
                return make(stmt::Assign{n.local, x(n.value)});
            } else if constexpr (std::is_same_v<N, stmt::Store>) {
                return make(stmt::Store{n.mem, x(n.index), x(n.value)});
            } else if constexpr (std::is_same_v<N, stmt::For>) {
                return make(stmt::For{n.local, x(n.begin), x(n.end), x(n.step), st(n.body)});
            } else if constexpr (std::is_same_v<N, stmt::If>) {
                return make(stmt::If{x(n.cond), st(n.then_body), st(n.else_body)});
            } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                return s;
            } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                return make(stmt::LoadVector{n.mem, x(n.index), n.locals});
            } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                std::vector<ExprRef> values;
                for (const auto& v : n.values) values.push_back(x(v));
                return make(stmt::StoreVector{n.mem, x(n.index), std::move(values)});
            } else {
                return make(
                    stmt::Fold{n.result, n.spec, x(n.extent), n.index, st(n.body), x(n.value)});
            }
        },
        s->node);
}

void for_each_stmt(const StmtRef& s, const std::function<void(const StmtNode&)>& f) {
    if (!s) return;
    f(*s);
    std::visit(
        [&](const auto& n) {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, stmt::Seq>) {
                for (const auto& i : n.items) for_each_stmt(i, f);
            } else if constexpr (std::is_same_v<N, stmt::For>) {
                for_each_stmt(n.body, f);
            } else if constexpr (std::is_same_v<N, stmt::If>) {
                for_each_stmt(n.then_body, f);
                for_each_stmt(n.else_body, f);
            } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                for_each_stmt(n.body, f);
            }
        },
        s->node);
}

bool contains(const StmtRef& s, const std::function<bool(const StmtNode&)>& pred) {
    bool found = false;
    for_each_stmt(s, [&](const StmtNode& n) { found = found || pred(n); });
    return found;
}

bool contains_barrier(const StmtRef& s) {
    return contains(s, [](const StmtNode& n) {
        if (std::holds_alternative<stmt::Barrier>(n.node)) return true;
        const auto* f = std::get_if<stmt::Fold>(&n.node);
        return f && f->spec.threads > 1;
    });
}

bool assigns(const StmtRef& s, int local) {
    return contains(s, [local](const StmtNode& n) {
        const auto* a = std::get_if<stmt::Assign>(&n.node);
        const auto* l = std::get_if<stmt::Let>(&n.node);
        return (a && a->local == local) || (l && l->local == local);
    });
}

}  // namespace kiln::ir
