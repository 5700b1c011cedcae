// range_index: x / c and x % c rewritten from x's non-negative terms, and loads' needless
// narrowing casts left out (range_index.hpp).
#include "ir/range_index.hpp"

#include <algorithm>
#include <climits>
#include <numeric>
#include <optional>
#include <vector>

#include "ir/ranges.hpp"
#include "ir/visit.hpp"

namespace kiln::ir {
namespace {

__extension__ typedef __int128 Wide;  // exact sums and products of int64 bounds

// How deep a sum is taken apart (adds, products, shifts and casts under one division).
constexpr int kMaxDepth = 16;

// One term of a sum: base * scale, base in [0, hi / scale]; a constant where base is null (its
// value is scale).
struct Term {
    ExprRef base;
    int64_t scale = 1;
    int64_t hi = 0;  // the term's largest value
};

Wide highest(const std::vector<Term>& terms, size_t first = 0) {
    Wide s = 0;
    for (size_t i = first; i < terms.size(); ++i) s += terms[i].hi;
    return s;
}

// A sum's terms as the ranges see them.
class Sums {
  public:
    explicit Sums(const Ranges& ranges) : ranges_(ranges) {}

    // e's terms, each non-negative, their sum e's value without wrapping in e's type (nor in the
    // type of any sum, product or cast on the way); nothing where that is not proven.
    std::optional<std::vector<Term>> terms(const ExprRef& e) const {
        std::vector<Term> out;
        if (!flatten(e, out, 0)) return std::nullopt;
        return out;
    }

  private:
    bool flatten(const ExprRef& e, std::vector<Term>& out, int depth) const {
        const DType t = e->type;
        if (!is_integer(t)) return false;
        const Wide top = type_range(t).hi;
        const size_t first = out.size();
        int64_t c;
        if (is_const(e, &c)) {
            if (c < 0) return false;
            out.push_back({nullptr, c, c});
            return true;
        }
        if (depth < kMaxDepth) {
            if (const auto* b = std::get_if<expr::Binary>(&e->node)) {
                if (b->op == BinOp::add)
                    return flatten(b->a, out, depth + 1) && flatten(b->b, out, depth + 1) &&
                           highest(out, first) <= top;
                ExprRef other;
                Wide factor = 0;
                if (b->op == BinOp::mul && is_const(b->b, &c)) {
                    other = b->a;
                    factor = c;
                } else if (b->op == BinOp::mul && is_const(b->a, &c)) {
                    other = b->b;
                    factor = c;
                } else if (b->op == BinOp::shl && is_const(b->b, &c) && c >= 0 &&
                           c < bits_of(t) - 1) {
                    other = b->a;
                    factor = Wide{1} << c;
                }
                if (other && factor >= 0) {
                    if (!flatten(other, out, depth + 1)) return false;
                    for (size_t i = first; i < out.size(); ++i) {
                        const Wide scale = out[i].scale * factor, hi = out[i].hi * factor;
                        if (scale > top || hi > top) return false;
                        out[i].scale = static_cast<int64_t>(scale);
                        out[i].hi = static_cast<int64_t>(hi);
                    }
                    return highest(out, first) <= top;
                }
            }
            // A cast of a non-negative sum that fits the new type keeps its value, and so each
            // of its terms'.
            if (const auto* k = std::get_if<expr::Cast>(&e->node); k && is_integer(k->a->type))
                return flatten(k->a, out, depth + 1) && highest(out, first) <= top;
        }
        const Interval r = ranges_.of(e, ranges_.requirement_facts());
        if (r.empty() || r.lo < 0) return false;
        out.push_back({e, 1, r.hi});
        return true;
    }

    const Ranges& ranges_;
};

ExprRef value_of(const Term& t, DType type) {
    if (!t.base) return int_const(type, t.scale);
    const ExprRef b = t.base->type == type ? t.base : make(type, expr::Cast{t.base});
    return t.scale == 1 ? b : make(type, expr::Binary{BinOp::mul, b, int_const(type, t.scale)});
}

ExprRef sum_of(const std::vector<Term>& terms, DType type) {
    ExprRef s;
    int64_t constant = 0;
    for (const Term& t : terms) {
        if (!t.base) {
            constant += t.scale;
            continue;
        }
        const ExprRef v = value_of(t, type);
        s = s ? make(type, expr::Binary{BinOp::add, s, v}) : v;
    }
    if (!s || constant != 0) {
        const ExprRef c = int_const(type, constant);
        s = s ? make(type, expr::Binary{BinOp::add, s, c}) : c;
    }
    return s;
}

// The terms split at c: `whole`, the multiples of c divided by c (a constant's multiple part
// among them), and `part`, the others (a constant's remainder among them).
struct Split {
    std::vector<Term> whole, part;
};
Split split(const std::vector<Term>& terms, int64_t c) {
    Split s;
    for (const Term& t : terms) {
        if (!t.base) {
            if (t.scale / c) s.whole.push_back({nullptr, t.scale / c, t.scale / c});
            if (t.scale % c) s.part.push_back({nullptr, t.scale % c, t.scale % c});
        } else if (t.scale % c == 0) {
            s.whole.push_back({t.base, t.scale / c, t.hi / c});
        } else {
            s.part.push_back(t);
        }
    }
    return s;
}

// x / c for x's terms, or null where nothing is gained.
ExprRef divided(const std::vector<Term>& terms, int64_t c, DType type) {
    // The divisors of c that some term is a multiple of, largest first.
    std::vector<int64_t> candidates{c};
    for (const Term& t : terms) candidates.push_back(std::gcd(c, t.scale == 0 ? c : t.scale));
    std::sort(candidates.rbegin(), candidates.rend());
    for (int64_t c1 : candidates) {
        Split s = split(terms, c1);
        if (highest(s.part) >= c1) continue;
        // x = c1 * A + r with 0 <= r < c1: x / c = A / (c / c1).
        const int64_t d = c / c1;
        Split a = split(s.whole, d);
        // A = d * O + I with O, I >= 0: A / d = O + I / d.
        if (c1 == 1 && a.whole.empty()) return nullptr;
        std::vector<Term> out = a.whole;
        if (!a.part.empty()) {
            ExprRef inner = sum_of(a.part, type);
            if (d > 1) inner = make(type, expr::Binary{BinOp::div, inner, int_const(type, d)});
            out.push_back({inner, 1, 0});
        }
        return out.empty() ? int_const(type, 0) : sum_of(out, type);
    }
    return nullptr;
}

// x % c for x's terms, or null where nothing is gained.
ExprRef remainder_of(const std::vector<Term>& terms, int64_t c, DType type) {
    const Split s = split(terms, c);
    const bool below = highest(s.part) < c;
    if (s.whole.empty() && !below) return nullptr;
    if (s.part.empty()) return int_const(type, 0);
    const ExprRef rest = sum_of(s.part, type);
    return below ? rest : make(type, expr::Binary{BinOp::rem, rest, int_const(type, c)});
}

// A load at cast<i32>(x), x an i64 that fits i32: the load at x.
ExprRef widened_load(const Ranges& ranges, const ExprRef& e) {
    const auto* l = std::get_if<expr::Load>(&e->node);
    const auto* c = l ? std::get_if<expr::Cast>(&l->index->node) : nullptr;
    if (!c || l->index->type != DType::i32 || c->a->type != DType::i64) return e;
    const Interval r = ranges.of(c->a, ranges.requirement_facts());
    if (r.empty() || r.lo < INT32_MIN || r.hi > INT32_MAX) return e;
    return make(e->type, expr::Load{l->mem, c->a});
}

ExprRef rewritten(const Ranges& ranges, const Sums& sums, const ExprRef& e) {
    if (std::holds_alternative<expr::Load>(e->node)) return widened_load(ranges, e);
    const auto* b = std::get_if<expr::Binary>(&e->node);
    int64_t c;
    if (!b || (b->op != BinOp::div && b->op != BinOp::rem) || !is_integer(e->type) ||
        !is_const(b->b, &c) || c < 1)
        return e;
    const auto terms = sums.terms(b->a);
    if (!terms) return e;
    const ExprRef r =
        b->op == BinOp::div ? divided(*terms, c, e->type) : remainder_of(*terms, c, e->type);
    return r ? r : e;
}

}  // namespace

Kernel simplify_indices(const Kernel& kernel) {
    const Ranges ranges(kernel);
    const Sums sums(ranges);
    Kernel k = kernel;
    k.body =
        rewrite_exprs(kernel.body, [&](const ExprRef& e) { return rewritten(ranges, sums, e); });
    return k;
}

}  // namespace kiln::ir
