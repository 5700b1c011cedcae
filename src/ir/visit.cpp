// IR walking and rebuilding helpers. Expressions are DAGs (the DSL reuses values freely), so
// walks and rewrites visit each distinct node once: a tree walk would grow exponentially with
// the depth of sharing (as in the math functions' pairs of f32s).
#include "ir/visit.hpp"

#include <unordered_map>
#include <unordered_set>

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
            } else if constexpr (std::is_same_v<N, expr::InBounds>) {
                f(n.index);
                f(n.length);
                if (n.when) f(n.when);
            }
        },
        e->node);
}

namespace {

// Visits the nodes below e not yet in `seen`, children first.
void walk_unseen(const ExprRef& e, const std::function<void(const ExprRef&)>& f,
                 std::unordered_set<const ExprNode*>& seen) {
    if (!seen.insert(e.get()).second) return;
    for_each_child(e, [&](const ExprRef& c) { walk_unseen(c, f, seen); });
    f(e);
}

}  // namespace

ExprRef with_children(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& r) {
    return std::visit(
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
            } else if constexpr (std::is_same_v<N, expr::InBounds>) {
                auto i = r(n.index), l = r(n.length), w = n.when ? r(n.when) : n.when;
                return i == n.index && l == n.length && w == n.when
                           ? e
                           : make(e->type, expr::InBounds{i, l, w, n.width, n.site, n.record});
            } else {
                return e;
            }
        },
        e->node);
}

namespace {

// Each node's replacement, for nodes reached more than once (expressions are DAGs).
using Rewritten = std::unordered_map<const ExprNode*, ExprRef>;

ExprRef rewrite_once(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& f,
                     Rewritten& done) {
    if (auto it = done.find(e.get()); it != done.end()) return it->second;
    ExprRef result =
        f(with_children(e, [&](const ExprRef& c) { return rewrite_once(c, f, done); }));
    done.emplace(e.get(), result);
    return result;
}

StmtRef rewrite_stmt(const StmtRef& s, const std::function<ExprRef(const ExprRef&)>& f,
                     Rewritten& done) {
    if (!s) return s;
    auto x = [&](const ExprRef& e) { return e ? rewrite_once(e, f, done) : e; };
    auto st = [&](const StmtRef& b) { return rewrite_stmt(b, f, done); };
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
                std::optional<stmt::CopySource> from;
                if (n.from) from = stmt::CopySource{n.from->mem, x(n.from->index)};
                return make(stmt::StoreVector{n.mem, x(n.index), std::move(values), from});
            } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                return make(stmt::LoadMatrix{n.mem, x(n.row), n.locals, n.trans});
            } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                std::vector<ExprRef> a, b;
                for (const auto& v : n.a) a.push_back(x(v));
                for (const auto& v : n.b) b.push_back(x(v));
                return make(stmt::Mma{n.input, std::move(a), std::move(b), n.acc});
            } else {
                return make(
                    stmt::Fold{n.result, n.spec, x(n.extent), n.index, st(n.body), x(n.value)});
            }
        },
        s->node);
}

}  // namespace

void walk(const ExprRef& e, const std::function<void(const ExprRef&)>& f) {
    std::unordered_set<const ExprNode*> seen;
    walk_unseen(e, f, seen);
}

ExprRef rewrite(const ExprRef& e, const std::function<ExprRef(const ExprRef&)>& f) {
    Rewritten done;
    return rewrite_once(e, f, done);
}

StmtRef rewrite_exprs(const StmtRef& s, const std::function<ExprRef(const ExprRef&)>& f) {
    Rewritten done;
    return rewrite_stmt(s, f, done);
}

void for_each_own_expr(const StmtNode& s, const std::function<void(const ExprRef&)>& f) {
    std::visit(
        [&](const auto& n) {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, stmt::Let> || std::is_same_v<N, stmt::Assign>) {
                f(n.value);
            } else if constexpr (std::is_same_v<N, stmt::Store>) {
                f(n.index);
                f(n.value);
            } else if constexpr (std::is_same_v<N, stmt::For>) {
                f(n.begin);
                f(n.end);
                f(n.step);
            } else if constexpr (std::is_same_v<N, stmt::If>) {
                f(n.cond);
            } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                f(n.index);
            } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                for (const auto& v : n.values) f(v);
                f(n.index);
                if (n.from) f(n.from->index);
            } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                f(n.row);
            } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                for (const auto& v : n.a) f(v);
                for (const auto& v : n.b) f(v);
            } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                f(n.extent);
            }
        },
        s.node);
}

void for_each_expr(const StmtNode& s, const std::function<void(const ExprRef&)>& f) {
    for_each_own_expr(s, f);
    if (const auto* fold = std::get_if<stmt::Fold>(&s.node)) f(fold->value);
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
        const auto* m = std::get_if<stmt::Mma>(&n.node);
        const auto* lm = std::get_if<stmt::LoadMatrix>(&n.node);
        return (a && a->local == local) || (l && l->local == local) ||
               (m && std::find(m->acc.begin(), m->acc.end(), local) != m->acc.end()) ||
               (lm && std::find(lm->locals.begin(), lm->locals.end(), local) != lm->locals.end());
    });
}

}  // namespace kiln::ir
