// Uniformity analysis: a fixpoint over the kernel's locals. A value varies when it depends on
// thread_index, a varying local, a per-thread array or a cross-thread shuffle, or when it is
// assigned under varying control. A fold's result is uniform only when the whole block folds.
#include "ir/uniformity.hpp"

#include "ir/visit.hpp"

namespace kiln::ir {

bool Uniformity::varying(const ExprRef& e) const {
    bool v = false;
    walk(e, [&](const ExprRef& n) {
        if (const auto* b = std::get_if<expr::Builtin>(&n->node))
            v |= b->which == BuiltinKind::thread_index;
        else if (const auto* l = std::get_if<expr::Local>(&n->node))
            v |= varying_local.at(static_cast<size_t>(l->id));
        else if (const auto* ld = std::get_if<expr::Load>(&n->node))
            v |= ld->mem.space == MemSpace::local;
        else if (std::holds_alternative<expr::ShuffleXor>(n->node))
            v = true;
    });
    return v;
}

namespace {

struct Analyzer {
    Uniformity& u;
    bool changed = false;

    void mark(int local, bool varying) {
        if (varying && !u.varying_local.at(static_cast<size_t>(local))) {
            u.varying_local[static_cast<size_t>(local)] = true;
            changed = true;
        }
    }

    void stmt(const StmtRef& s, bool varying_control) {
        if (!s) return;
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& i : n.items) stmt(i, varying_control);
                } else if constexpr (std::is_same_v<N, stmt::Let> ||
                                     std::is_same_v<N, stmt::Assign>) {
                    mark(n.local, varying_control || u.varying(n.value));
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    // As uniform as a load (see varying()).
                    const bool v =
                        varying_control || u.varying(n.index) || n.mem.space == MemSpace::local;
                    for (int l : n.locals) mark(l, v);
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    for (int l : n.acc) mark(l, true);  // each thread holds its own fragment
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    for (int l : n.locals) mark(l, true);
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    const bool v = varying_control || u.varying(n.begin) || u.varying(n.end) ||
                                   u.varying(n.step);
                    mark(n.local, v);
                    stmt(n.body, v);
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    const bool v = varying_control || u.varying(n.cond);
                    stmt(n.then_body, v);
                    stmt(n.else_body, v);
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    // Inside the body, the index differs between the fold's threads.
                    mark(n.index, true);
                    stmt(n.body, true);
                    const bool whole_block = n.spec.threads == u.kernel->block_size;
                    mark(n.result, varying_control || !whole_block || u.varying(n.extent));
                }
            },
            s->node);
    }
};

}  // namespace

Uniformity analyze_uniformity(const Kernel& kernel) {
    Uniformity u;
    u.kernel = &kernel;
    u.varying_local.assign(kernel.locals.size(), false);
    Analyzer a{u};
    do {
        a.changed = false;
        a.stmt(kernel.body, false);
    } while (a.changed);
    return u;
}

}  // namespace kiln::ir
