// ranges: interval arithmetic over kiln's integer semantics, refined by facts.
#include "ir/ranges.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>

#include "ir/visit.hpp"

namespace kiln::ir {
namespace {

__extension__ typedef __int128 Wide;  // exact sums and products of int64 bounds

// How deep facts are applied to the bounds they mention (a < b, b < c, ...).
constexpr int kMaxFactDepth = 3;

// The most elements a buffer holds (Buffer's limit: 2^40 bytes).
constexpr int64_t kMaxBufferElements = int64_t{1} << 40;

constexpr Interval kEmpty{0, -1};

// [lo, hi] where it fits the type, else the type's whole range (the operation may wrap).
Interval fit(DType t, Wide lo, Wide hi) {
    const Interval all = type_range(t);
    if (lo < all.lo || hi > all.hi) return all;
    return {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

Interval join(Interval a, Interval b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Interval meet(Interval a, Interval b) {
    return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
}

bool is_constant(const ExprRef& e, int64_t& value) {
    return is_const(e, &value) && is_integer(e->type);
}

Interval multiply(DType t, Interval a, Interval b) {
    const Wide p[] = {Wide{a.lo} * b.lo, Wide{a.lo} * b.hi, Wide{a.hi} * b.lo, Wide{a.hi} * b.hi};
    return fit(t, *std::min_element(p, p + 4), *std::max_element(p, p + 4));
}

// a / b and a % b under kiln's rules (x / 0 = 0, x % 0 = x), for b > 0 or b that may be 0.
Interval divide(DType t, Interval a, Interval b) {
    if (b.lo < 0) return type_range(t);
    Interval r = kEmpty;
    if (b.hi >= 1) {
        const int64_t lo = std::max<int64_t>(b.lo, 1);
        // Truncation toward zero: monotonic in a; for a fixed a, smaller in magnitude as b grows.
        r = {std::min(a.lo / lo, a.lo / b.hi), std::max(a.hi / lo, a.hi / b.hi)};
    }
    if (b.lo == 0) r = join(r, {0, 0});
    return r;
}

Interval remainder(DType t, Interval a, Interval b) {
    if (b.lo < 0) return type_range(t);
    Interval r = kEmpty;
    if (b.hi >= 1) {
        const int64_t m = b.hi - 1;
        r = a.lo >= 0 ? Interval{0, std::min(a.hi, m)}
                      : Interval{std::max(a.lo, -m), std::min(std::max<int64_t>(a.hi, 0), m)};
    }
    if (b.lo == 0) r = join(r, a);
    return r;
}

// The smallest 2^k - 1 at or above v (v >= 0).
int64_t all_ones_above(int64_t v) {
    return v <= 0 ? 0 : static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v) + 1) - 1);
}

BinOp swapped(BinOp op) {
    switch (op) {
        case BinOp::gt:
            return BinOp::lt;
        case BinOp::ge:
            return BinOp::le;
        default:
            return op;
    }
}

void collect(const ExprRef& cond, bool holds, std::vector<Fact>& out) {
    if (const auto* u = std::get_if<expr::Unary>(&cond->node)) {
        if (u->op == UnOp::logical_not) collect(u->a, !holds, out);
        return;
    }
    const auto* b = std::get_if<expr::Binary>(&cond->node);
    if (!b) return;
    if ((b->op == BinOp::logical_and && holds) || (b->op == BinOp::logical_or && !holds)) {
        collect(b->a, holds, out);
        collect(b->b, holds, out);
        return;
    }
    if (!is_comparison(b->op) || !is_integer(b->a->type)) return;
    BinOp op = b->op;
    if (!holds) {  // integers are totally ordered: !(a < b) is b <= a, ...
        switch (op) {
            case BinOp::lt:
                op = BinOp::ge;
                break;
            case BinOp::le:
                op = BinOp::gt;
                break;
            case BinOp::gt:
                op = BinOp::le;
                break;
            case BinOp::ge:
                op = BinOp::lt;
                break;
            case BinOp::ne:
                op = BinOp::eq;
                break;
            default:
                return;  // a != b gives no bound
        }
    }
    if (op == BinOp::ne) return;
    if (op == BinOp::gt || op == BinOp::ge)
        out.push_back({b->b, swapped(op), b->a});
    else
        out.push_back({b->a, op, b->b});
}

}  // namespace

Interval type_range(DType t) {
    switch (t) {
        case DType::i8:
            return {INT8_MIN, INT8_MAX};
        case DType::u8:
            return {0, UINT8_MAX};
        case DType::i32:
            return {INT32_MIN, INT32_MAX};
        case DType::u32:
            return {0, UINT32_MAX};
        case DType::boolean:
            return {0, 1};
        default:
            return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    }
}

std::vector<Fact> facts_of(const ExprRef& cond, bool holds) {
    std::vector<Fact> out;
    collect(cond, holds, out);
    return out;
}

bool mentions(const ExprRef& e, const std::function<bool(const ExprNode&)>& pred) {
    bool found = false;
    walk(e, [&](const ExprRef& n) { found = found || pred(*n); });
    return found;
}

std::set<int> assigned_in(const StmtRef& s) {
    std::set<int> out;
    for_each_stmt(s, [&](const StmtNode& n) {
        std::visit(
            [&](const auto& x) {
                using N = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<N, stmt::Let> || std::is_same_v<N, stmt::Assign> ||
                              std::is_same_v<N, stmt::For>) {
                    out.insert(x.local);
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    out.insert(x.locals.begin(), x.locals.end());
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    out.insert(x.acc.begin(), x.acc.end());
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    out.insert(x.locals.begin(), x.locals.end());
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    out.insert(x.result);
                    out.insert(x.index);
                }
            },
            n.node);
    });
    return out;
}

std::vector<Fact> lasting(const std::vector<Fact>& list, const StmtRef& body) {
    const std::set<int> changed = assigned_in(body);
    auto unstable = [&](const ExprNode& n) {
        if (const auto* l = std::get_if<expr::Local>(&n.node)) return changed.count(l->id) > 0;
        return std::holds_alternative<expr::Load>(n.node) ||
               std::holds_alternative<expr::ShuffleXor>(n.node) ||
               std::holds_alternative<expr::InBounds>(n.node);
    };
    std::vector<Fact> out;
    for (const Fact& f : list)
        if (!mentions(f.a, unstable) && !mentions(f.b, unstable)) out.push_back(f);
    return out;
}

bool same_value(const ExprRef& a, const ExprRef& b) {
    if (a == b) return true;
    const auto* la = std::get_if<expr::BufferLen>(&a->node);
    const auto* lb = std::get_if<expr::BufferLen>(&b->node);
    if (la || lb) return la && lb && la->param == lb->param;
    if (a->type != b->type || a->node.index() != b->node.index()) return false;
    return std::visit(
        [&](const auto& x) -> bool {
            using N = std::decay_t<decltype(x)>;
            const N& y = std::get<N>(b->node);
            if constexpr (std::is_same_v<N, expr::Const>) {
                return x.i == y.i && (x.f == y.f || (x.f != x.f && y.f != y.f));
            } else if constexpr (std::is_same_v<N, expr::Local>) {
                return x.id == y.id;
            } else if constexpr (std::is_same_v<N, expr::ScalarParam>) {
                return x.param == y.param;
            } else if constexpr (std::is_same_v<N, expr::Builtin>) {
                return x.which == y.which;
            } else if constexpr (std::is_same_v<N, expr::Unary>) {
                return x.op == y.op && same_value(x.a, y.a);
            } else if constexpr (std::is_same_v<N, expr::Binary>) {
                return x.op == y.op && same_value(x.a, y.a) && same_value(x.b, y.b);
            } else if constexpr (std::is_same_v<N, expr::Select>) {
                return same_value(x.cond, y.cond) && same_value(x.a, y.a) && same_value(x.b, y.b);
            } else if constexpr (std::is_same_v<N, expr::Cast> ||
                                 std::is_same_v<N, expr::Bitcast>) {
                return same_value(x.a, y.a);
            } else {
                return false;  // loads (memory may change), shuffles, ...: only the same node
            }
        },
        a->node);
}

Linear linear(const ExprRef& e) {
    const auto* b = std::get_if<expr::Binary>(&e->node);
    int64_t c;
    if (!b || !is_integer(e->type)) return {e, 0};
    if (b->op == BinOp::add && is_constant(b->b, c)) {
        Linear l = linear(b->a);
        return {l.base, l.offset + c};
    }
    if (b->op == BinOp::add && is_constant(b->a, c)) {
        Linear l = linear(b->b);
        return {l.base, l.offset + c};
    }
    if (b->op == BinOp::sub && is_constant(b->b, c)) {
        Linear l = linear(b->a);
        return {l.base, l.offset - c};
    }
    return {e, 0};
}

Ranges::Ranges(const Kernel& kernel, int64_t max_grid)
    : kernel_(kernel),
      max_grid_(max_grid),
      definitions_(kernel.locals.size()),
      local_state_(kernel.locals.size(), 0),
      local_range_(kernel.locals.size()),
      fixed_state_(kernel.locals.size(), 0),
      fixed_(kernel.locals.size()) {
    for (const auto& r : kernel.requirements)
        for (const Fact& f : facts_of(r.cond, true)) requirements_.push_back(f);
    for_each_stmt(kernel.body, [&](const StmtNode& s) {
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Let> || std::is_same_v<N, stmt::Assign>) {
                    definitions_.at(static_cast<size_t>(n.local)).push_back({.value = n.value});
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    // A body that gives the variable values of its own leaves its steps
                    // unbounded.
                    definitions_.at(static_cast<size_t>(n.local))
                        .push_back({.begin = n.begin,
                                    .end = n.end,
                                    .step = n.step,
                                    .opaque = assigns(n.body, n.local)});
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    for (int l : n.locals)
                        definitions_.at(static_cast<size_t>(l)).push_back({.opaque = true});
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    for (int l : n.acc)
                        definitions_.at(static_cast<size_t>(l)).push_back({.opaque = true});
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    for (int l : n.locals)
                        definitions_.at(static_cast<size_t>(l)).push_back({.opaque = true});
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    definitions_.at(static_cast<size_t>(n.result)).push_back({.opaque = true});
                    definitions_.at(static_cast<size_t>(n.index)).push_back({.opaque = true});
                }
            },
            s.node);
    });
}

ExprRef Ranges::fixed_value(int id) const {
    const auto i = static_cast<size_t>(id);
    if (fixed_state_.at(i) != 0) return fixed_[i];  // known, or defined through itself: null
    fixed_state_[i] = 1;
    const bool one = definitions_[i].size() == 1 && definitions_[i][0].value;
    bool fixed = one;
    if (one)
        walk(definitions_[i][0].value, [&](const ExprRef& n) {
            const auto* l = std::get_if<expr::Local>(&n->node);
            fixed = fixed && !(l && !fixed_value(l->id)) &&
                    !std::holds_alternative<expr::Load>(n->node) &&
                    !std::holds_alternative<expr::ShuffleXor>(n->node);
        });
    fixed_state_[i] = 2;
    if (fixed) fixed_[i] = definitions_[i][0].value;
    return fixed_[i];
}

ExprRef Ranges::look_through(const ExprRef& e) const {
    const auto* l = std::get_if<expr::Local>(&e->node);
    if (!l) return e;
    const ExprRef v = fixed_value(l->id);
    return v ? look_through(v) : e;
}

Interval Ranges::of(const ExprRef& e, const std::vector<Fact>& facts) const {
    return eval(e, facts, 0);
}

Interval Ranges::local(int id) const {
    const auto i = static_cast<size_t>(id);
    const DType t = kernel_.locals.at(i).type;
    if (!is_integer(t)) return type_range(t);
    if (local_state_[i] == 2) return local_range_[i];
    if (local_state_[i] == 1) return type_range(t);  // defined through itself: give up
    local_state_[i] = 1;
    Interval r = kEmpty;
    // A loop variable runs from begin while below end, one step at a time; after the last step
    // it is at most end - 1 + step. Without a positive step, or where that could pass the type's
    // end, it may wrap. A loop that begins where the variable is (a loop continuing another)
    // only raises it: its values are the others', up to its own end.
    auto loop_top = [&](const Definition& d) -> std::optional<Wide> {
        const Interval e = of(d.end, requirements_), s = of(d.step, requirements_);
        if (s.lo < 1 || e.empty()) return std::nullopt;
        return Wide{e.hi} - 1 + s.hi;
    };
    auto continues = [&](const Definition& d) {
        const auto* l = d.begin ? std::get_if<expr::Local>(&d.begin->node) : nullptr;
        return l && l->id == id;
    };
    for (const Definition& d : definitions_[i]) {
        if (d.opaque) {
            r = type_range(t);
        } else if (d.value) {
            r = join(r, of(d.value, requirements_));
        } else if (!continues(d)) {
            const Interval b = of(d.begin, requirements_);
            const auto top = loop_top(d);
            r = !top || b.empty() ? type_range(t)
                                  : join(r, fit(t, b.lo, std::max(Wide{b.hi}, *top)));
        }
    }
    for (const Definition& d : definitions_[i])
        if (!d.opaque && !d.value && continues(d)) {
            const auto top = loop_top(d);
            r = !top || r.empty() ? type_range(t) : fit(t, r.lo, std::max(Wide{r.hi}, *top));
        }
    if (definitions_[i].empty()) r = type_range(t);
    local_state_[i] = 2;
    local_range_[i] = r;
    return r;
}

Interval Ranges::refine(const ExprRef& e, Interval r, const std::vector<Fact>& facts,
                        int depth) const {
    if (depth >= kMaxFactDepth) return r;
    auto apply = [&](const std::vector<Fact>& list) {
        for (const Fact& f : list) {
            if (r.empty()) return;
            const bool left = same_value(f.a, e), right = !left && same_value(f.b, e);
            if (!left && !right) continue;
            const Interval other = eval(left ? f.b : f.a, facts, depth + 1);
            if (other.empty()) {
                r = kEmpty;
                return;
            }
            if (f.op == BinOp::eq) {
                r = meet(r, other);
            } else if (left) {  // e < other or e <= other
                const Wide hi = Wide{other.hi} - (f.op == BinOp::lt ? 1 : 0);
                if (hi < r.hi) r.hi = static_cast<int64_t>(std::max<Wide>(hi, Wide{r.lo} - 1));
            } else {  // other < e or other <= e
                const Wide lo = Wide{other.lo} + (f.op == BinOp::lt ? 1 : 0);
                if (lo > r.lo) r.lo = static_cast<int64_t>(std::min<Wide>(lo, Wide{r.hi} + 1));
            }
        }
    };
    apply(facts);
    if (&facts != &requirements_) apply(requirements_);
    return r;
}

Interval Ranges::eval(const ExprRef& e, const std::vector<Fact>& facts, int depth) const {
    const DType t = e->type;
    if (!is_integer(t) && t != DType::boolean)
        return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    auto sub = [&](const ExprRef& c) { return eval(c, facts, depth); };
    Interval r = std::visit(
        [&](const auto& n) -> Interval {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, expr::Const>) {
                return {n.i, n.i};
            } else if constexpr (std::is_same_v<N, expr::Local>) {
                return local(n.id);
            } else if constexpr (std::is_same_v<N, expr::BufferLen>) {
                return {0, t == DType::i64 ? kMaxBufferElements : INT32_MAX};
            } else if constexpr (std::is_same_v<N, expr::Builtin>) {
                switch (n.which) {
                    case BuiltinKind::thread_index:
                        return {0, kernel_.block_size - 1};
                    case BuiltinKind::block_index:
                        return {0, max_grid_ - 1};
                    case BuiltinKind::grid_size:
                        return {1, max_grid_};
                }
                return type_range(t);
            } else if constexpr (std::is_same_v<N, expr::Unary>) {
                const Interval a = sub(n.a);
                if (a.empty()) return kEmpty;
                switch (n.op) {
                    case UnOp::neg:
                        return fit(t, -Wide{a.hi}, -Wide{a.lo});
                    case UnOp::abs:
                        if (a.lo >= 0) return a;
                        return fit(t, a.hi <= 0 ? -Wide{a.hi} : 0,
                                   std::max(-Wide{a.lo}, Wide{a.hi}));
                    case UnOp::bit_not:
                        return fit(t, ~Wide{a.hi}, ~Wide{a.lo});
                    default:
                        return type_range(t);
                }
            } else if constexpr (std::is_same_v<N, expr::Binary>) {
                if (!is_integer(n.a->type)) return type_range(t);
                const Interval a = sub(n.a), b = sub(n.b);
                if (a.empty() || b.empty()) return kEmpty;
                int64_t c;
                switch (n.op) {
                    case BinOp::add:
                        return fit(t, Wide{a.lo} + b.lo, Wide{a.hi} + b.hi);
                    case BinOp::sub: {
                        // x - (x & (2^k - 1)) is x with its low k bits cleared.
                        const auto* m = std::get_if<expr::Binary>(&n.b->node);
                        if (m && m->op == BinOp::bit_and && is_constant(m->b, c) && c >= 0 &&
                            std::has_single_bit(static_cast<uint64_t>(c) + 1) &&
                            same_value(m->a, n.a) && a.lo >= 0)
                            return {a.lo & ~c, a.hi & ~c};
                        return fit(t, Wide{a.lo} - b.hi, Wide{a.hi} - b.lo);
                    }
                    case BinOp::mul:
                        return multiply(t, a, b);
                    case BinOp::div:
                        return divide(t, a, b);
                    case BinOp::rem:
                        return remainder(t, a, b);
                    case BinOp::min:
                        return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
                    case BinOp::max:
                        return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
                    case BinOp::bit_and:
                        if (a.lo >= 0 && b.lo >= 0) return {0, std::min(a.hi, b.hi)};
                        if (a.lo >= 0) return {0, a.hi};
                        if (b.lo >= 0) return {0, b.hi};
                        return type_range(t);
                    case BinOp::bit_or:
                    case BinOp::bit_xor:
                        if (a.lo >= 0 && b.lo >= 0)
                            return {0, all_ones_above(std::max(a.hi, b.hi))};
                        return type_range(t);
                    case BinOp::shl:
                        if (!is_constant(n.b, c)) return type_range(t);
                        c &= bits_of(t) - 1;
                        return fit(t, Wide{a.lo} << c, Wide{a.hi} << c);
                    case BinOp::shr:
                        if (!is_constant(n.b, c))
                            return a.lo >= 0 ? Interval{0, a.hi} : type_range(t);
                        c &= bits_of(t) - 1;
                        return {a.lo >> c, a.hi >> c};
                    default:
                        return type_range(t);  // comparisons and logic: bool
                }
            } else if constexpr (std::is_same_v<N, expr::Select>) {
                return join(sub(n.a), sub(n.b));
            } else if constexpr (std::is_same_v<N, expr::Cast>) {
                if (!is_integer(n.a->type)) return type_range(t);
                const Interval a = sub(n.a);
                if (a.empty()) return kEmpty;
                return fit(t, a.lo, a.hi);
            } else {
                return type_range(t);  // loads, parameters, bitcasts, shuffles, dp4a, ...
            }
        },
        e->node);
    if (t == DType::boolean) return type_range(t);
    return refine(e, r, facts, depth);
}

}  // namespace kiln::ir
