// no_wrap: integer operations and loop steps proven by the range analysis to stay in their type.
#include "ir/no_wrap.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <unordered_map>

#include "ir/ranges.hpp"
#include "ir/visit.hpp"

namespace kiln::ir {
namespace {

__extension__ typedef __int128 Wide;  // exact sums and products of int64 bounds

bool fits(DType t, Wide lo, Wide hi) {
    const Interval all = type_range(t);
    return lo >= all.lo && hi <= all.hi;
}

// Whether `a op b` stays in t for every a in x and b in y.
bool stays(DType t, BinOp op, Interval x, Interval y) {
    if (x.empty() || y.empty()) return true;  // never evaluated
    switch (op) {
        case BinOp::add:
            return fits(t, Wide{x.lo} + y.lo, Wide{x.hi} + y.hi);
        case BinOp::sub:
            return fits(t, Wide{x.lo} - y.hi, Wide{x.hi} - y.lo);
        case BinOp::mul: {
            const Wide p[] = {Wide{x.lo} * y.lo, Wide{x.lo} * y.hi, Wide{x.hi} * y.lo,
                              Wide{x.hi} * y.hi};
            return fits(t, *std::min_element(p, p + 4), *std::max_element(p, p + 4));
        }
        default:
            return false;
    }
}

}  // namespace

int64_t i32_position_grid(int block_size) {
    return std::min<int64_t>(INT32_MAX, (int64_t{1} << 31) / block_size);
}

NoWrap find_no_wrap(const Kernel& kernel, int64_t max_grid) {
    const Ranges ranges(kernel, max_grid);
    const std::vector<Fact>& facts = ranges.requirement_facts();
    NoWrap out;
    // Each integer operation's verdict over every place it is evaluated (a node may be shared by
    // several statements): it never wraps where it stays in its type in each of them, under the
    // facts known there: the requirements, and under an if its condition's facts that last
    // through the branch.
    std::unordered_map<const ExprNode*, bool> stays_everywhere;
    auto judge = [&](const ExprRef& root, const std::vector<Fact>& known) {
        walk(root, [&](const ExprRef& e) {
            const auto* b = std::get_if<expr::Binary>(&e->node);
            if (!b || !is_integer(e->type)) return;
            const bool ok = stays(e->type, b->op, ranges.of(b->a, known), ranges.of(b->b, known));
            auto [it, first] = stays_everywhere.emplace(e.get(), ok);
            if (!first) it->second = it->second && ok;
        });
    };
    std::function<void(const StmtRef&, const std::vector<Fact>&)> visit =
        [&](const StmtRef& s, const std::vector<Fact>& known) {
            if (!s) return;
            for_each_expr(*s, [&](const ExprRef& e) { judge(e, known); });
            std::visit(
                [&](const auto& n) {
                    using N = std::decay_t<decltype(n)>;
                    if constexpr (std::is_same_v<N, stmt::Seq>) {
                        for (const StmtRef& i : n.items) visit(i, known);
                    } else if constexpr (std::is_same_v<N, stmt::For> ||
                                         std::is_same_v<N, stmt::Fold>) {
                        visit(n.body, known);
                    } else if constexpr (std::is_same_v<N, stmt::If>) {
                        for (const auto& [branch, holds] :
                             {std::pair{n.then_body, true}, {n.else_body, false}}) {
                            if (!branch) continue;
                            std::vector<Fact> inner = lasting(facts_of(n.cond, holds), branch);
                            inner.insert(inner.end(), known.begin(), known.end());
                            visit(branch, inner);
                        }
                    }
                },
                s->node);
        };
    visit(kernel.body, facts);
    // A local's value given outside every loop may be computed again at the top of a CPU thread
    // loop (codegen/cpu_threads), outside the ifs around its let: judged there under the
    // requirements alone.
    std::function<void(const StmtRef&)> outside_loops = [&](const StmtRef& s) {
        if (!s) return;
        if (const auto* q = std::get_if<stmt::Seq>(&s->node)) {
            for (const StmtRef& i : q->items) outside_loops(i);
        } else if (const auto* c = std::get_if<stmt::If>(&s->node)) {
            outside_loops(c->then_body);
            outside_loops(c->else_body);
        } else if (const auto* l = std::get_if<stmt::Let>(&s->node)) {
            judge(l->value, facts);
        }
    };
    outside_loops(kernel.body);
    for (const auto& [node, ok] : stays_everywhere)
        if (ok) out.ops.insert(node);
    // A step is taken from a value below `end` (the body leaves the variable alone), so it
    // stays in the type where end - 1 + step does.
    for_each_stmt(kernel.body, [&](const StmtNode& n) {
        const auto* f = std::get_if<stmt::For>(&n.node);
        if (!f || assigns(f->body, f->local)) return;
        const Interval end = ranges.of(f->end, facts), step = ranges.of(f->step, facts);
        if (end.empty()) return;
        const Interval before{ranges.of(make(f->begin->type, expr::Local{f->local}), facts).lo,
                              end.hi - 1};
        if (step.lo >= 0 && stays(f->begin->type, BinOp::add, before, step))
            out.steps.insert(f->local);
    });
    return out;
}

}  // namespace kiln::ir
