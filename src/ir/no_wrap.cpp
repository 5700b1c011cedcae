// no_wrap: integer operations and loop steps proven by the range analysis to stay in their type.
#include "ir/no_wrap.hpp"

#include <algorithm>
#include <climits>

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
    rewrite_exprs(kernel.body, [&](const ExprRef& e) {
        const auto* b = std::get_if<expr::Binary>(&e->node);
        if (b && is_integer(e->type) &&
            stays(e->type, b->op, ranges.of(b->a, facts), ranges.of(b->b, facts)))
            out.ops.insert(e.get());
        return e;
    });
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
