// check_bounds: guards on every access the range analysis cannot prove in range.
#include "ir/check_bounds.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/ranges.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"

namespace kiln::ir {

uint32_t encode_site(const AccessSite& s) {
    return (1u << 31) | (s.store ? 1u << 30 : 0u) | (static_cast<uint32_t>(s.width) << 24) |
           (static_cast<uint32_t>(s.mem.space) << 20) |
           (static_cast<uint32_t>(s.mem.id) & 0xfffffu);
}

AccessSite decode_site(uint32_t code) {
    return {{static_cast<MemSpace>((code >> 20) & 3u), static_cast<int>(code & 0xfffffu)},
            (code & (1u << 30)) != 0,
            static_cast<int>((code >> 24) & 15u)};
}

namespace {

__extension__ typedef __int128 Wide;  // exact sums and products of int64 bounds

// Where an expression of a statement is evaluated: the conditions that lead to it within the
// statement (arms of selects, right sides of && and ||; null: none), and what is known there.
struct Context {
    ExprRef when;
    std::vector<Fact> facts;
};

// Whether every value of `from` is one of `to` (a cast between them keeps the value).
bool widens(DType from, DType to) {
    const Interval f = type_range(from), t = type_range(to);
    return is_integer(from) && is_integer(to) && t.lo <= f.lo && f.hi <= t.hi;
}

bool fits(DType t, Interval base, int64_t offset) {
    const Interval all = type_range(t);
    return base.empty() || (Wide{base.lo} + offset >= all.lo && Wide{base.hi} + offset <= all.hi);
}

// The most blocks of `block_size` threads whose positions fit in i32.
int64_t small_grid(int block_size) {
    return std::min<int64_t>(INT32_MAX, (int64_t{1} << 31) / block_size);
}

struct Checker {
    Kernel& k;
    Ranges ranges;  // any launch
    Ranges in_i32;  // launches whose positions fit in i32
    MemRef record;
    int64_t max_grid;    // the most blocks whose positions fit in i32
    int grid_fits = -1;  // the local holding whether the grid has at most max_grid blocks
    BoundsCheckCounts counts;
    std::vector<Fact> facts;  // what holds at the statement being rewritten
    // Per statement: (node, when) -> the node rewritten there.
    std::map<std::pair<const ExprNode*, const ExprNode*>, ExprRef> memo;
    // (when, condition, holds) -> when && (condition or its negation), made once.
    std::map<std::tuple<const ExprNode*, const ExprNode*, bool>, ExprRef> conjunctions;
    std::unordered_map<const ExprNode*, bool> has_access;
    // Per statement: one load for all those of the same memory at the same index (they read
    // the same value); the loads it makes wherever it runs (outside every arm of a select and
    // every right side of && / ||); per expression whether all its loads are such.
    std::unordered_map<const ExprNode*, ExprRef> same_load;
    std::vector<ExprRef> loads;
    std::unordered_set<const ExprNode*> unconditional, marked;
    std::unordered_map<const ExprNode*, bool> loads_unconditional;

    ExprRef length(MemRef m) const {
        if (m.space == MemSpace::global) return make(DType::i64, expr::BufferLen{m.id});
        return int_const(DType::i64, array_info(k, m).size);
    }

    bool reads_memory(const ExprRef& e) {
        if (auto it = has_access.find(e.get()); it != has_access.end()) return it->second;
        bool found = std::holds_alternative<expr::Load>(e->node);
        for_each_child(e, [&](const ExprRef& c) { found = reads_memory(c) || found; });
        has_access[e.get()] = found;
        return found;
    }

    // Whether b <= len(m): b is m's length, or a fact says so.
    bool at_most_length(const ExprRef& b, MemRef m, const std::vector<Fact>& known) const {
        const ExprRef len = length(m);
        if (same_value(b, len)) return true;
        for (const auto* list : {&known, &ranges.requirement_facts()})
            for (const Fact& f : *list)
                if ((same_value(f.a, b) && same_value(f.b, len)) ||
                    (f.op == BinOp::eq && same_value(f.a, len) && same_value(f.b, b)))
                    return true;
        return false;
    }

    // The test an access keeps, where `known` holds: none (null) where it is proved in range
    // in any launch; the grid's where it is proved in range where positions fit in i32; else
    // its own.
    ExprRef test(MemRef m, const ExprRef& index, const ExprRef& checked, int width, bool store,
                 const ExprRef& when, const std::vector<Fact>& known) {
        ++counts.accesses[static_cast<size_t>(m.space)];
        if (proven(ranges, m, index, width, known)) return nullptr;
        if (proven(in_i32, m, index, width, known)) {
            ++counts.grid_tested[static_cast<size_t>(m.space)];
            if (grid_fits < 0) grid_fits = static_cast<int>(k.locals.size());
            return make(DType::boolean, expr::Local{grid_fits});
        }
        ++counts.checked[static_cast<size_t>(m.space)];
        return make(DType::boolean, expr::InBounds{checked, length(m), when, width,
                                                   encode_site({m, store, width}), record});
    }

    bool proven(const Ranges& r, MemRef m, const ExprRef& index, int width,
                const std::vector<Fact>& known) const {
        const Interval i = r.of(index, known);
        if (i.empty()) return true;  // never evaluated where the facts hold
        if (i.lo < 0) return false;
        const Interval len = r.of(length(m), known);
        if (Wide{i.hi} + width - 1 < len.lo) return true;
        if (m.space != MemSpace::global) return false;
        // index + width - 1 <= a < b <= len(m) (or a <= b < len(m)), by one fact a < b.
        const Linear li = linear(index);
        const Interval base = r.of(li.base, known);
        for (const auto* list : {&known, &r.requirement_facts()})
            for (const Fact& f : *list) {
                if (f.op == BinOp::eq) continue;
                const Linear la = linear(f.a), lb = linear(f.b);
                const int64_t below = f.op == BinOp::lt ? 0 : -1;  // b's offset from len(m)
                const bool same =
                    same_value(li.base, la.base) ||
                    same_value(resolve(r, li.base, known), resolve(r, la.base, known));
                if (same && li.offset + width - 1 <= la.offset &&
                    fits(index->type, base, li.offset) && fits(f.a->type, base, la.offset) &&
                    lb.offset <= below && fits(f.b->type, r.of(lb.base, known), lb.offset) &&
                    at_most_length(lb.base, m, known))
                    return true;
            }
        return row_major(r, m, index, width, known);
    }

    // Whether index is a * c + b, c > 0 a constant, with 0 <= b <= c - width and
    // 0 <= a <= len(m) / c - 1: within row a of a row-major matrix of rows of c in m. The index
    // is a tree of sums; one leaf is a * c, and b is the other parts, each >= 0 (so no partial
    // sum wraps), each taken whole so that facts about it apply.
    bool row_major(const Ranges& r, MemRef m, const ExprRef& index, int width,
                   const std::vector<Fact>& known) const {
        std::vector<Interval> rest;  // the other parts' ranges, on the way down
        // `limit`: the largest value every sum on the way down holds without wrapping.
        std::function<bool(const ExprRef&, int64_t)> find = [&](const ExprRef& e, int64_t limit) {
            const ExprRef v = resolve(r, e, known);
            if (const auto* cast = std::get_if<expr::Cast>(&v->node);
                cast && widens(cast->a->type, v->type))
                return find(cast->a, std::min(limit, type_range(cast->a->type).hi));
            const auto* n = std::get_if<expr::Binary>(&v->node);
            if (!n) return false;
            if (n->op == BinOp::add) {
                for (const auto& [part, other] : {std::pair{n->a, n->b}, std::pair{n->b, n->a}}) {
                    rest.push_back(r.of(other, known));
                    const bool found = rest.back().lo >= 0 && find(part, limit);
                    rest.pop_back();
                    if (found) return true;
                }
                return false;
            }
            int64_t c = 0;
            const ExprRef a = n->op != BinOp::mul  ? nullptr
                              : is_const(n->b, &c) ? n->a
                              : is_const(n->a, &c) ? n->b
                                                   : nullptr;
            if (!a || c < width) return false;
            Wide b_hi = 0;
            for (const Interval& i : rest) b_hi += i.hi;
            const Interval ai = r.of(a, known);
            return ai.lo >= 0 && b_hi <= c - width && Wide{ai.hi} * c + b_hi <= limit &&
                   below_rows(r, a, c, m, known);
        };
        return find(index, type_range(index->type).hi);
    }

    // e through the locals it reads: their fixed values, or their values by a fact v == e'.
    ExprRef resolve(const Ranges& r, const ExprRef& e, const std::vector<Fact>& known,
                    int depth = 0) const {
        const ExprRef v = r.look_through(e);
        const auto* l = std::get_if<expr::Local>(&v->node);
        if (!l || depth > 8) return v;
        for (auto f = known.rbegin(); f != known.rend(); ++f)
            if (const auto* a = std::get_if<expr::Local>(&f->a->node);
                f->op == BinOp::eq && a && a->id == l->id)
                return resolve(r, f->b, known, depth + 1);
        return v;
    }

    // Whether e <= len(m) / c - 1: e is (len(m) / c) - k with k >= 1, the minimum of something
    // and such an e, or below len(m) / c by a fact.
    bool below_rows(const Ranges& r, const ExprRef& e, int64_t c, MemRef m,
                    const std::vector<Fact>& known) const {
        const ExprRef a = resolve(r, e, known);
        if (const auto* mn = std::get_if<expr::Binary>(&a->node); mn && mn->op == BinOp::min)
            return below_rows(r, mn->a, c, m, known) || below_rows(r, mn->b, c, m, known);
        const Linear l = linear(a);
        if (l.offset <= -1 && fits(a->type, r.of(l.base, known), l.offset) &&
            rows_in(r, l.base, c, m, known))
            return true;
        for (const auto* list : {&known, &r.requirement_facts()})
            for (const Fact& f : *list)
                if (f.op == BinOp::lt && (same_value(f.a, e) || same_value(f.a, a)) &&
                    rows_in(r, f.b, c, m, known))
                    return true;
        return false;
    }

    // Whether q is L / c with L <= len(m): the whole rows of c in m, at most.
    bool rows_in(const Ranges& r, const ExprRef& q, int64_t c, MemRef m,
                 const std::vector<Fact>& known) const {
        const auto* div = std::get_if<expr::Binary>(&resolve(r, q, known)->node);
        int64_t d = 0;
        return div && div->op == BinOp::div && is_const(div->b, &d) && d == c &&
               at_most_length(div->a, m, known);
    }

    // `when` and then `cond` (or its negation), as one condition.
    ExprRef and_then(const ExprRef& when, const ExprRef& cond, bool holds) {
        const auto key = std::make_tuple(when.get(), cond.get(), holds);
        if (auto it = conjunctions.find(key); it != conjunctions.end()) return it->second;
        ExprRef c = holds ? cond : make(DType::boolean, expr::Unary{UnOp::logical_not, cond});
        if (when) c = make(DType::boolean, expr::Binary{BinOp::logical_and, when, c});
        conjunctions[key] = c;
        return c;
    }

    // The context of a branch taken where `cond` (rewritten: `checked`) is `holds`.
    Context branch(const Context& c, const ExprRef& cond, const ExprRef& checked, bool holds) {
        Context inner{and_then(c.when, checked, holds), c.facts};
        for (const Fact& f : facts_of(cond, holds)) inner.facts.push_back(f);
        return inner;
    }

    // The statement's first load of the same memory at the same index as `load`.
    const ExprRef& first_load(const ExprRef& load) {
        if (auto it = same_load.find(load.get()); it != same_load.end()) return it->second;
        const auto& l = std::get<expr::Load>(load->node);
        for (const ExprRef& other : loads) {
            const auto& o = std::get<expr::Load>(other->node);
            if (o.mem == l.mem && same_value(o.index, l.index))
                return same_load[load.get()] = other;
        }
        loads.push_back(load);
        return same_load[load.get()] = load;
    }

    // Adds e's unconditional loads (e is evaluated wherever its statement runs).
    void mark_unconditional(const ExprRef& e) {
        if (!reads_memory(e) || !marked.insert(e.get()).second) return;
        if (std::holds_alternative<expr::Load>(e->node)) unconditional.insert(first_load(e).get());
        if (const auto* s = std::get_if<expr::Select>(&e->node)) return mark_unconditional(s->cond);
        if (const auto* b = std::get_if<expr::Binary>(&e->node);
            b && (b->op == BinOp::logical_and || b->op == BinOp::logical_or))
            return mark_unconditional(b->a);
        for_each_child(e, [&](const ExprRef& child) { mark_unconditional(child); });
    }

    bool only_unconditional_loads(const ExprRef& e) {
        if (!reads_memory(e)) return true;
        if (auto it = loads_unconditional.find(e.get()); it != loads_unconditional.end())
            return it->second;
        bool all = !std::holds_alternative<expr::Load>(e->node) ||
                   unconditional.count(first_load(e).get());
        for_each_child(e, [&](const ExprRef& c) { all = only_unconditional_loads(c) && all; });
        loads_unconditional[e.get()] = all;
        return all;
    }

    ExprRef expr(const ExprRef& e, const Context& c) {
        if (!reads_memory(e)) return e;
        // A load the statement makes anyway is checked there: where else it is evaluated, its
        // value and its check are that one's (so a math function's selects over x[i] share one
        // x[i] instead of one per arm).
        if (c.when && only_unconditional_loads(e)) return expr(e, Context{nullptr, facts});
        if (std::holds_alternative<expr::Load>(e->node))
            if (const ExprRef& first = first_load(e); first != e) return expr(first, c);
        const auto key = std::make_pair(e.get(), c.when.get());
        if (auto it = memo.find(key); it != memo.end()) return it->second;
        ExprRef out;
        if (const auto* load = std::get_if<expr::Load>(&e->node)) {
            const ExprRef index = expr(load->index, c);
            out = index == load->index ? e : make(e->type, expr::Load{load->mem, index});
            if (ExprRef ok = test(load->mem, load->index, index, 1, false, c.when, c.facts))
                out = make(e->type, expr::Select{ok, out, constant(e->type, 0, 0)});
        } else if (const auto* s = std::get_if<expr::Select>(&e->node)) {
            const ExprRef cond = expr(s->cond, c);
            const ExprRef a = expr(s->a, branch(c, s->cond, cond, true));
            const ExprRef b = expr(s->b, branch(c, s->cond, cond, false));
            out = cond == s->cond && a == s->a && b == s->b
                      ? e
                      : make(e->type, expr::Select{cond, a, b});
        } else if (const auto* b = std::get_if<expr::Binary>(&e->node);
                   b && (b->op == BinOp::logical_and || b->op == BinOp::logical_or)) {
            // The right side is evaluated only where the left is true (&&) or false (||).
            const ExprRef left = expr(b->a, c);
            const ExprRef right = expr(b->b, branch(c, b->a, left, b->op == BinOp::logical_and));
            out =
                left == b->a && right == b->b ? e : make(e->type, expr::Binary{b->op, left, right});
        } else {
            out = with_children(e, [&](const ExprRef& child) { return expr(child, c); });
        }
        memo[key] = out;
        return out;
    }

    ExprRef top(const ExprRef& e) {
        mark_unconditional(e);
        return expr(e, Context{nullptr, facts});
    }

    // `access` where elements index ... index+width-1 of m are in range (`index` as written,
    // `checked` rewritten); `otherwise` where they are not.
    StmtRef guarded(MemRef m, const ExprRef& index, const ExprRef& checked, int width, bool store,
                    StmtRef access, StmtRef otherwise = nullptr) {
        ExprRef ok = test(m, index, checked, width, store, nullptr, facts);
        if (!ok) return access;
        return make(stmt::If{ok, std::move(access), std::move(otherwise)});
    }

    // The fact v == e a let or assignment gives, where e reads no memory and not v.
    std::optional<Fact> value_fact(const StmtNode& s) const {
        const auto* let = std::get_if<stmt::Let>(&s.node);
        const auto* assign = std::get_if<stmt::Assign>(&s.node);
        const int local = let ? let->local : assign ? assign->local : -1;
        if (local < 0) return std::nullopt;
        const ExprRef& value = let ? let->value : assign->value;
        const bool unstable = mentions(value, [&](const ExprNode& n) {
            const auto* l = std::get_if<expr::Local>(&n.node);
            return (l && l->id == local) || std::holds_alternative<expr::Load>(n.node) ||
                   std::holds_alternative<expr::ShuffleXor>(n.node);
        });
        if (unstable || !is_integer(value->type)) return std::nullopt;
        return Fact{make(value->type, expr::Local{local}), BinOp::eq, value};
    }

    // Drops the facts from `depth` on that read a local `s` changes.
    void forget_changed(const StmtRef& s, size_t depth) {
        const std::set<int> changed = assigned_in(s);
        if (changed.empty()) return;
        auto reads_changed = [&](const Fact& f) {
            auto changes = [&](const ExprNode& n) {
                const auto* l = std::get_if<expr::Local>(&n.node);
                return l && changed.count(l->id) > 0;
            };
            return mentions(f.a, changes) || mentions(f.b, changes);
        };
        facts.erase(std::remove_if(facts.begin() + static_cast<std::ptrdiff_t>(depth), facts.end(),
                                   reads_changed),
                    facts.end());
    }

    StmtRef within(const StmtRef& body, std::vector<Fact> more) {
        const size_t depth = facts.size();
        for (Fact& f : lasting(more, body)) facts.push_back(std::move(f));
        StmtRef out = stmt(body);
        facts.resize(depth);
        return out;
    }

    StmtRef stmt(const StmtRef& s) {
        if (!s) return s;
        memo.clear();
        conjunctions.clear();
        same_load.clear();
        loads.clear();
        unconditional.clear();
        marked.clear();
        loads_unconditional.clear();
        return std::visit(
            [&](const auto& n) -> StmtRef {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    // After `v = e` (e reading no memory), v == e until v or a local e reads
                    // changes.
                    const size_t depth = facts.size();
                    std::vector<StmtRef> items;
                    for (const auto& i : n.items) {
                        forget_changed(i, depth);
                        items.push_back(stmt(i));
                        if (std::optional<Fact> f = value_fact(*i)) facts.push_back(*f);
                    }
                    facts.resize(depth);
                    return make(stmt::Seq{std::move(items)});
                } else if constexpr (std::is_same_v<N, stmt::Let>) {
                    return make(stmt::Let{n.local, top(n.value)});
                } else if constexpr (std::is_same_v<N, stmt::Assign>) {
                    return make(stmt::Assign{n.local, top(n.value)});
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    const ExprRef index = top(n.index), value = top(n.value);
                    return guarded(n.mem, n.index, index, 1, true,
                                   make(stmt::Store{n.mem, index, value}));
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    const ExprRef begin = top(n.begin), end = top(n.end), step = top(n.step);
                    // In the body, begin <= i < end, where stepping i cannot wrap.
                    const ExprRef i = make(n.begin->type, expr::Local{n.local});
                    std::vector<Fact> loop{{i, BinOp::lt, n.end}};
                    const Interval e = ranges.of(n.end, facts), st = ranges.of(n.step, facts);
                    if (st.lo >= 1 && fits(n.end->type, e, st.hi - 1))
                        loop.push_back({n.begin, BinOp::le, i});
                    return make(stmt::For{n.local, begin, end, step, within(n.body, loop)});
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    const ExprRef cond = top(n.cond);
                    StmtRef then_body = within(n.then_body, facts_of(n.cond, true));
                    StmtRef else_body =
                        n.else_body ? within(n.else_body, facts_of(n.cond, false)) : nullptr;
                    return make(stmt::If{cond, then_body, else_body});
                } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                    return s;
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    const ExprRef index = top(n.index);
                    const DType t = mem_dtype(k, n.mem);
                    std::vector<StmtRef> zeros;
                    for (int l : n.locals)
                        zeros.push_back(make(stmt::Assign{l, constant(t, 0, 0)}));
                    return guarded(n.mem, n.index, index, static_cast<int>(n.locals.size()), false,
                                   make(stmt::LoadVector{n.mem, index, n.locals}),
                                   make(stmt::Seq{std::move(zeros)}));
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    const ExprRef index = top(n.index);
                    std::vector<ExprRef> values;
                    for (const auto& v : n.values) values.push_back(top(v));
                    const int width = static_cast<int>(n.values.size());
                    StmtRef store =
                        guarded(n.mem, n.index, index, width, true,
                                make(stmt::StoreVector{n.mem, index, std::move(values)}));
                    if (!n.from) return store;
                    // A copy reads its source's 16 bytes whole: it stays a copy where they are
                    // in range, else the checked values are stored (recording the fault).
                    const ExprRef from = top(n.from->index);
                    const int count = 16 / static_cast<int>(size_of(mem_dtype(k, n.from->mem)));
                    const ExprRef ok =
                        test(n.from->mem, n.from->index, from, count, false, nullptr, facts);
                    StmtRef copy =
                        guarded(n.mem, n.index, index, width, true,
                                make(stmt::StoreVector{n.mem, index, n.values,
                                                       stmt::CopySource{n.from->mem, from}}));
                    return ok ? make(stmt::If{ok, copy, store}) : copy;
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    // A warp's collective load runs in every lane: a lane whose row is out of
                    // range records the fault and gives row 0 instead.
                    const ExprRef row = top(n.row);
                    const ExprRef ok = test(n.mem, n.row, row, 4, false, nullptr, facts);
                    const ExprRef safe =
                        ok ? make(row->type, expr::Select{ok, row, constant(row->type, 0, 0)})
                           : row;
                    return make(stmt::LoadMatrix{n.mem, safe, n.locals, n.trans});
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    std::vector<ExprRef> a, b;
                    for (const auto& v : n.a) a.push_back(top(v));
                    for (const auto& v : n.b) b.push_back(top(v));
                    return make(stmt::Mma{n.input, std::move(a), std::move(b), n.acc});
                } else {
                    fail("kernel {}: check_bounds runs after lower_folds; found a fold", k.name);
                }
            },
            s->node);
    }
};

// A parameter name the kernel does not use.
std::string unused_name(const Kernel& k, const std::string& wanted) {
    for (int n = 0;; ++n) {
        const std::string name = n == 0 ? wanted : fmt::format("{}_{}", wanted, n);
        bool taken = false;
        for (const Param& p : k.params) taken = taken || p.name == name;
        if (!taken) return name;
    }
}

}  // namespace

CheckedKernel check_bounds(const Kernel& lowered) {
    CheckedKernel out{lowered, {}};
    Kernel& k = out.kernel;
    k.params.push_back(
        {unused_name(k, "kiln_fault"), true, DType::u32, Access::read_write, CacheHint::normal});
    const int64_t max_grid = small_grid(k.block_size);
    Checker c{k,
              Ranges(lowered),
              Ranges(lowered, max_grid),
              {MemSpace::global, static_cast<int>(k.params.size() - 1)},
              max_grid};
    k.body = c.stmt(lowered.body);
    if (c.grid_fits >= 0) {
        // Tested once, at the start: a larger grid is the launch's fault.
        k.locals.push_back({"grid_fits", DType::boolean});
        const ExprRef grid =
            make(DType::i64, expr::Cast{make(DType::i32, expr::Builtin{BuiltinKind::grid_size})});
        const ExprRef fits =
            make(DType::boolean, expr::InBounds{grid, int_const(DType::i64, max_grid + 1), nullptr,
                                                1, kGridSite, c.record});
        k.body = make(stmt::Seq{{make(stmt::Let{c.grid_fits, fits}), k.body}});
    }
    out.counts = c.counts;
    return out;
}

}  // namespace kiln::ir
