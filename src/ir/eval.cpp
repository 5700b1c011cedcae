// eval: a small interpreter for requirement expressions.
#include "ir/eval.hpp"

#include "ir/simplify.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"

namespace kiln::ir {

HostValue eval_host(const ExprRef& e, const std::function<HostValue(int)>& param_value,
                    const std::function<int64_t(int)>& buffer_len) {
    // Substitute the leaves with constants, then let simplify fold the rest exactly.
    ExprRef folded = simplify(rewrite(e, [&](const ExprRef& n) -> ExprRef {
        if (const auto* p = std::get_if<expr::ScalarParam>(&n->node)) {
            HostValue v = param_value(p->param);
            return constant(n->type, v.f, v.i);
        }
        if (const auto* b = std::get_if<expr::BufferLen>(&n->node))
            return int_const(n->type, buffer_len(b->param));
        return n;
    }));
    const auto* c = std::get_if<expr::Const>(&folded->node);
    if (!c) fail("requirement could not be evaluated on the host");
    return {c->i, c->f};
}

}  // namespace kiln::ir
