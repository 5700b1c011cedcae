// divisibility: known power-of-two divisors of integer values (see divisibility.hpp).
#include "ir/divisibility.hpp"

#include <algorithm>
#include <bit>
#include <functional>

namespace kiln::ir {
namespace {

// Integer arithmetic wraps modulo 2^width, which keeps divisibility by any power of two up to
// 2^width: an 8-bit value is known to be a multiple of at most 2^8.
int64_t cap_for(DType t) {
    return std::min<int64_t>(kMaxKnownDivisor, int64_t{1} << std::min(8 * size_of(t), size_t{62}));
}

int64_t of_constant(int64_t v, DType t) {
    if (v == 0) return cap_for(t);
    const auto magnitude = static_cast<uint64_t>(v);  // two's complement keeps the low zeros
    return std::min(cap_for(t), int64_t{1} << std::countr_zero(magnitude));
}

}  // namespace

Divisibility::Divisibility(const Kernel& kernel) : local_(kernel.locals.size(), 1) {
    // Every value each local is given (nullptr: something not analysed, e.g. a loaded value).
    std::vector<std::vector<ExprRef>> given(kernel.locals.size());
    std::vector<bool> opaque(kernel.locals.size(), false);
    std::function<void(const StmtRef&)> scan = [&](const StmtRef& s) {
        if (!s) return;
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& i : n.items) scan(i);
                } else if constexpr (std::is_same_v<N, stmt::Let> ||
                                     std::is_same_v<N, stmt::Assign>) {
                    given[static_cast<size_t>(n.local)].push_back(n.value);
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    given[static_cast<size_t>(n.local)].push_back(n.begin);
                    given[static_cast<size_t>(n.local)].push_back(n.step);
                    scan(n.body);
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    scan(n.then_body);
                    scan(n.else_body);
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    for (int l : n.locals) opaque[static_cast<size_t>(l)] = true;
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    for (int l : n.locals) opaque[static_cast<size_t>(l)] = true;
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    for (int l : n.acc) opaque[static_cast<size_t>(l)] = true;
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    opaque[static_cast<size_t>(n.result)] = true;
                    opaque[static_cast<size_t>(n.index)] = true;
                    scan(n.body);
                }
            },
            s->node);
    };
    scan(kernel.body);
    // Greatest fixpoint: start every integer local at the most its type allows and lower it
    // until each of its values has at least its divisor.
    for (size_t l = 0; l < local_.size(); ++l) {
        const DType t = kernel.locals[l].type;
        local_[l] = is_integer(t) && !opaque[l] && !given[l].empty() ? cap_for(t) : 1;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t l = 0; l < local_.size(); ++l) {
            int64_t d = local_[l];
            for (const auto& v : given[l]) d = std::min(d, of(v));
            if (d != local_[l]) {
                local_[l] = d;
                changed = true;
            }
        }
    }
}

int64_t Divisibility::of(const ExprRef& e) const {
    if (!is_integer(e->type)) return 1;
    const int64_t cap = cap_for(e->type);
    return std::visit(
        [&](const auto& n) -> int64_t {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, expr::Const>) {
                return of_constant(n.i, e->type);
            } else if constexpr (std::is_same_v<N, expr::Local>) {
                return std::min(cap, local_.at(static_cast<size_t>(n.id)));
            } else if constexpr (std::is_same_v<N, expr::Unary>) {
                return n.op == UnOp::neg || n.op == UnOp::abs ? std::min(cap, of(n.a)) : 1;
            } else if constexpr (std::is_same_v<N, expr::Binary>) {
                switch (n.op) {
                    case BinOp::add:
                    case BinOp::sub:
                    case BinOp::min:
                    case BinOp::max:
                    case BinOp::bit_or:
                    case BinOp::bit_xor:
                        return std::min(of(n.a), of(n.b));
                    case BinOp::mul:
                        return std::min(cap, of(n.a) * of(n.b));
                    case BinOp::bit_and:  // the low zero bits of either operand stay zero
                        return std::max(of(n.a), of(n.b));
                    case BinOp::shl: {
                        const auto* c = std::get_if<expr::Const>(&n.b->node);
                        if (!c || c->i < 0 || c->i >= 8 * static_cast<int64_t>(size_of(e->type)))
                            return 1;
                        return std::min(cap, of(n.a) << std::min<int64_t>(c->i, 6));
                    }
                    default:
                        return 1;
                }
            } else if constexpr (std::is_same_v<N, expr::Select>) {
                return std::min(of(n.a), of(n.b));
            } else if constexpr (std::is_same_v<N, expr::Cast>) {
                return is_integer(n.a->type) ? std::min(cap, of(n.a)) : 1;
            } else {
                return 1;  // loads, parameters, buffer lengths, thread positions, ...
            }
        },
        e->node);
}

}  // namespace kiln::ir
