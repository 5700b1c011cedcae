// cpu_threads: splits a block into thread loops and uniform steps, then gives each local a home.
#include "codegen/cpu_threads.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "ir/uniformity.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

namespace {

bool is_thread_index(const ExprRef& e) {
    const auto* b = std::get_if<expr::Builtin>(&e->node);
    return b && b->which == BuiltinKind::thread_index;
}

// Calls f on every local id a statement names: read in its expressions, or given a value.
void for_each_local(const StmtRef& s, const std::function<void(int)>& f) {
    auto in_expr = [&](const ExprRef& e) {
        if (!e) return;
        walk(e, [&](const ExprRef& n) {
            if (const auto* l = std::get_if<expr::Local>(&n->node)) f(l->id);
        });
    };
    for_each_stmt(s, [&](const StmtNode& n) {
        std::visit(
            [&](const auto& x) {
                using N = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<N, stmt::Let> || std::is_same_v<N, stmt::Assign>) {
                    f(x.local);
                    in_expr(x.value);
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    in_expr(x.index);
                    in_expr(x.value);
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    f(x.local);
                    in_expr(x.begin);
                    in_expr(x.end);
                    in_expr(x.step);
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    in_expr(x.cond);
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    for (int l : x.locals) f(l);
                    in_expr(x.index);
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    in_expr(x.index);
                    for (const auto& v : x.values) in_expr(v);
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    f(x.result);
                    f(x.index);
                    in_expr(x.extent);
                    in_expr(x.value);
                }
            },
            n.node);
    });
}

// Calls f(mem, index, width) on every memory access of a statement tree: loads in its
// expressions and stores (width 1), vector loads and stores (their width).
void for_each_access(const StmtRef& s,
                     const std::function<void(const MemRef&, const ExprRef&, size_t)>& f) {
    auto in_expr = [&](const ExprRef& e) {
        if (!e) return;
        walk(e, [&](const ExprRef& n) {
            if (const auto* ld = std::get_if<expr::Load>(&n->node)) f(ld->mem, ld->index, 1);
        });
    };
    for_each_stmt(s, [&](const StmtNode& n) {
        std::visit(
            [&](const auto& x) {
                using N = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<N, stmt::Let> || std::is_same_v<N, stmt::Assign>) {
                    in_expr(x.value);
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    f(x.mem, x.index, 1);
                    in_expr(x.index);
                    in_expr(x.value);
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    in_expr(x.begin);
                    in_expr(x.end);
                    in_expr(x.step);
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    in_expr(x.cond);
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    f(x.mem, x.index, x.locals.size());
                    in_expr(x.index);
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    f(x.mem, x.index, x.values.size());
                    in_expr(x.index);
                    for (const auto& v : x.values) in_expr(v);
                }
            },
            n.node);
    });
}

// Calls f on every per-thread array (MemSpace::local) a statement reads or writes.
void for_each_array(const StmtRef& s, const std::function<void(int)>& f) {
    for_each_access(s, [&](const MemRef& m, const ExprRef&, size_t) {
        if (m.space == MemSpace::local) f(m.id);
    });
}

bool names_local(const ExprRef& e, int id) {
    bool found = false;
    walk(e, [&](const ExprRef& n) {
        const auto* l = std::get_if<expr::Local>(&n->node);
        found |= l && l->id == id;
    });
    return found;
}

// Which locals a pass through a body may read before giving them a value: live[l] for local l.
// One walk of the body serves every local; `defined` says which hold a value of this pass.
class LiveIn {
  public:
    explicit LiveIn(size_t locals) : live(locals, false) {}

    void body(const std::vector<StmtRef>& items) {
        std::vector<bool> defined(live.size(), false);
        for (const auto& s : items) stmt(s, defined);
    }

    std::vector<bool> live;

  private:
    // Marks the locals e reads that hold no value yet, except `except`.
    void reads(const ExprRef& e, const std::vector<bool>& defined, int except = -1) {
        if (!e) return;
        walk(e, [&](const ExprRef& n) {
            const auto* l = std::get_if<expr::Local>(&n->node);
            if (l && l->id != except && !defined[static_cast<size_t>(l->id)])
                live[static_cast<size_t>(l->id)] = true;
        });
    }

    void stmt(const StmtRef& s, std::vector<bool>& defined) {
        if (!s) return;
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& i : n.items) stmt(i, defined);
                } else if constexpr (std::is_same_v<N, stmt::Let> ||
                                     std::is_same_v<N, stmt::Assign>) {
                    reads(n.value, defined);
                    defined[static_cast<size_t>(n.local)] = true;
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    reads(n.index, defined);
                    reads(n.value, defined);
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    reads(n.cond, defined);
                    std::vector<bool> then_defined = defined, else_defined = defined;
                    stmt(n.then_body, then_defined);
                    stmt(n.else_body, else_defined);
                    for (size_t l = 0; l < defined.size(); ++l)
                        defined[l] = then_defined[l] && else_defined[l];
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    // The body may run no time: what it defines does not hold after the loop.
                    reads(n.begin, defined);
                    reads(n.end, defined, n.local);
                    reads(n.step, defined, n.local);
                    std::vector<bool> in_body = defined;
                    in_body[static_cast<size_t>(n.local)] = true;
                    stmt(n.body, in_body);
                    defined[static_cast<size_t>(n.local)] = true;
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    reads(n.index, defined);
                    for (int l : n.locals) defined[static_cast<size_t>(l)] = true;
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    reads(n.index, defined);
                    for (const auto& v : n.values) reads(v, defined);
                }
            },
            s->node);
    }
};

std::vector<bool> live_in(const std::vector<StmtRef>& body, size_t locals) {
    LiveIn l(locals);
    l.body(body);
    return std::move(l.live);
}

// How a local gets its values: the values of the Lets and Assigns giving it one, and whether
// anything else (a loop, a vector load, a fold) does too.
struct LocalValues {
    std::vector<ExprRef> values;
    int lets = 0;
    bool other = false;
};

std::vector<LocalValues> local_values(const Kernel& k) {
    std::vector<LocalValues> out(k.locals.size());
    auto at = [&](int l) -> LocalValues& { return out[static_cast<size_t>(l)]; };
    for_each_stmt(k.body, [&](const StmtNode& n) {
        std::visit(
            [&](const auto& x) {
                using N = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<N, stmt::Let>) {
                    at(x.local).values.push_back(x.value);
                    ++at(x.local).lets;
                } else if constexpr (std::is_same_v<N, stmt::Assign>) {
                    at(x.local).values.push_back(x.value);
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    at(x.local).other = true;
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    for (int l : x.locals) at(l).other = true;
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    at(x.result).other = true;
                    at(x.index).other = true;
                }
            },
            n.node);
    });
    return out;
}

// By local id: the value of the one Let that gives the local a value, where no other statement
// does (null otherwise).
std::vector<ExprRef> single_lets(const Kernel& k) {
    const std::vector<LocalValues> all = local_values(k);
    std::vector<ExprRef> value(all.size());
    for (size_t l = 0; l < all.size(); ++l)
        if (!all[l].other && all[l].lets == 1 && all[l].values.size() == 1)
            value[l] = all[l].values[0];
    return value;
}

struct Planner {
    Kernel& k;
    Uniformity u;
    bool inside;  // uniform loops whose threads are far apart may stay inside thread loops
    std::vector<ExprRef> single_let = single_lets(k);
    std::vector<LocalValues> values = local_values(k);
    int thread_loops = 0;
    std::map<const StmtNode*, StmtRef> rewritten;  // strided loops, by the loop they replace

    // s with the strided loops in place of the loops they replace: the kernel the steps run,
    // which later passes read (ir/no_wrap.hpp).
    StmtRef with_rewrites(const StmtRef& s) const {
        if (!s) return s;
        if (auto it = rewritten.find(s.get()); it != rewritten.end())
            return with_rewrites_inside(it->second);
        return with_rewrites_inside(s);
    }
    StmtRef with_rewrites_inside(const StmtRef& s) const {
        if (const auto* q = std::get_if<stmt::Seq>(&s->node)) {
            std::vector<StmtRef> items;
            for (const auto& i : q->items) items.push_back(with_rewrites(i));
            return make(stmt::Seq{items});
        }
        if (const auto* c = std::get_if<stmt::If>(&s->node))
            return make(
                stmt::If{c->cond, with_rewrites(c->then_body), with_rewrites(c->else_body)});
        if (const auto* f = std::get_if<stmt::For>(&s->node))
            return make(stmt::For{f->local, f->begin, f->end, f->step, with_rewrites(f->body)});
        return s;
    }

    bool uniform(const ExprRef& e) const { return !u.varying(e); }
    bool uniform_local(int id) const { return !u.varying_local.at(static_cast<size_t>(id)); }

    ExprRef i32(int64_t v) const { return int_const(DType::i32, v); }
    ExprRef bin(BinOp op, const ExprRef& a, const ExprRef& b) const {
        return make(is_comparison(op) ? DType::boolean : a->type, expr::Binary{op, a, b});
    }

    bool uniform_loop(const stmt::For& f) const {
        return uniform_local(f.local) && uniform(f.begin) && uniform(f.end) && uniform(f.step);
    }

    // How far apart adjacent threads' values of an i32 index are: 0 (the same), 1 (adjacent),
    // or kFar (farther, or not known). A local given values only by Lets and Assigns is as far
    // apart as the farthest of its values.
    static constexpr int64_t kFar = 1 << 20;
    static constexpr int64_t kWidestVector = 16;  // KILN_STRIP's largest value

    // Whether e is the thread index, or a local given it once.
    bool thread_index_value(const ExprRef& e) const {
        if (is_thread_index(e)) return true;
        const auto* l = std::get_if<expr::Local>(&e->node);
        if (!l || static_cast<size_t>(l->id) >= single_let.size()) return false;
        const ExprRef& v = single_let[static_cast<size_t>(l->id)];
        return v && is_thread_index(v);
    }

    int64_t thread_stride(const ExprRef& e, int depth = 0) const {
        if (uniform(e)) return 0;
        if (is_thread_index(e)) return 1;
        if (depth > 16) return kFar;
        if (const auto* l = std::get_if<expr::Local>(&e->node)) {
            if (static_cast<size_t>(l->id) >= values.size()) return kFar;  // made by the plan
            const LocalValues& v = values[static_cast<size_t>(l->id)];
            if (v.other || v.values.empty()) return kFar;
            int64_t stride = 0;
            for (const ExprRef& value : v.values)
                stride = std::max(stride, thread_stride(value, depth + 1));
            return stride;
        }
        // i32 -> i64 keeps the distance; so does i64 -> i32 where the values fit (where they
        // do not, the plan only runs the loops in another order: the same results).
        if (const auto* c = std::get_if<expr::Cast>(&e->node)) {
            auto index_type = [](DType t) { return t == DType::i32 || t == DType::i64; };
            return index_type(e->type) && index_type(c->a->type) ? thread_stride(c->a, depth + 1)
                                                                 : kFar;
        }
        const auto* b = std::get_if<expr::Binary>(&e->node);
        if (!b) return kFar;
        const int64_t sa = thread_stride(b->a, depth + 1), sb = thread_stride(b->b, depth + 1);
        if (sa == 0 && sb == 0) return 0;  // the same operands give the same value
        // t / c and t % c (t >> j, t & (2^j - 1)) for a constant c that is at least the block
        // size or a multiple of the widest vector: within every aligned vector of threads, the
        // same value and adjacent values.
        int64_t c = 0;
        const bool by_const = thread_index_value(b->a) && is_const(b->b, &c) && c > 0;
        auto groups = [&](int64_t size) {
            return size >= k.block_size || size % kWidestVector == 0;
        };
        const bool whole_groups =
            by_const && ((b->op == BinOp::div || b->op == BinOp::rem) ? groups(c)
                         : b->op == BinOp::shr     ? c < 31 && groups(int64_t{1} << c)
                         : b->op == BinOp::bit_and ? ((c + 1) & c) == 0 && groups(c + 1)
                                                   : false);
        switch (b->op) {
            case BinOp::add:
                return std::min(sa + sb, kFar);
            case BinOp::sub:
                return sb == 0 ? sa : kFar;
            case BinOp::mul:
                if (is_const(b->b, &c) && sb == 0) return std::min(sa * std::abs(c), kFar);
                if (is_const(b->a, &c) && sa == 0) return std::min(sb * std::abs(c), kFar);
                return kFar;
            case BinOp::min:
            case BinOp::max:  // a clamp to a uniform bound: the same or as far apart as before
                return sb == 0 ? sa : (sa == 0 ? sb : kFar);
            case BinOp::div:
            case BinOp::shr:
                return whole_groups ? 0 : kFar;
            case BinOp::rem:
            case BinOp::bit_and:
                return whole_groups ? 1 : kFar;
            default:
                return kFar;
        }
    }

    // Whether adjacent threads touch adjacent or the same elements in every global or shared
    // access of s: then running threads side by side inside a uniform loop gives the compiler
    // contiguous vectors. Where they do not (a thread per row), the loop stays inside the
    // thread loop, where the compiler vectorizes it (a fold's lanes) instead.
    bool threads_adjacent(const StmtRef& s) const {
        bool adjacent = true;
        for_each_access(s, [&](const MemRef& m, const ExprRef& index, size_t width) {
            // A per-thread array's elements are a whole array apart between threads; a vector
            // access's, its width.
            const bool far = m.space == MemSpace::local ? array_info(k, m).size > 1
                                                        : width > 1 || thread_stride(index) > 1;
            if (far) adjacent = false;
        });
        return adjacent;
    }

    // Whether the thread loop moves inside the uniform loop f: where its threads touch adjacent
    // elements (threads_adjacent). A loop with a barrier always does; so does every uniform loop
    // when `inside` is off (the plan's fallback where a loop left inside a thread loop gives a
    // value to a local that uniform work reads).
    bool hoist(const stmt::For& f) const {
        return uniform_loop(f) && (!inside || threads_adjacent(f.body) || contains_barrier(f.body));
    }

    // A step known to be positive in every launch: a positive constant, the grid size, or a
    // product of those.
    bool positive(const ExprRef& e) const {
        int64_t c = 0;
        if (is_const(e, &c)) return c > 0;
        if (const auto* b = std::get_if<expr::Builtin>(&e->node))
            return b->which == BuiltinKind::grid_size;
        if (const auto* b = std::get_if<expr::Binary>(&e->node)) {
            // A product of two positives that might wrap is not known positive: bound it.
            int64_t x = 0, y = 0;
            if (b->op == BinOp::mul && (is_const(b->a, &x) || is_const(b->b, &y)))
                return positive(b->a) && positive(b->b) && x <= 4096 && y <= 4096;
        }
        return false;
    }

    // `u` where begin is u + thread_index (or thread_index alone), u uniform; null otherwise. A
    // local given its value once, by a Let of thread_index plus a constant, counts as that.
    ExprRef thread_offset(const ExprRef& begin) const {
        if (is_thread_index(begin)) return i32(0);
        if (const auto* l = std::get_if<expr::Local>(&begin->node)) {
            const ExprRef& value = single_let.at(static_cast<size_t>(l->id));
            if (!value) return nullptr;
            ExprRef offset = thread_offset(value);
            return offset && is_const(offset) ? offset : nullptr;
        }
        const auto* b = std::get_if<expr::Binary>(&begin->node);
        if (!b || b->op != BinOp::add || begin->type != DType::i32) return nullptr;
        if (is_thread_index(b->b) && uniform(b->a)) return b->a;
        if (is_thread_index(b->a) && uniform(b->b)) return b->b;
        return nullptr;
    }

    // Whether `f` is a loop whose threads start one apart and step together (see the header),
    // its variable read nowhere else.
    bool stridable(const stmt::For& f, const StmtRef& whole) const {
        return !uniform_loop(f) && uniform(f.end) && uniform(f.step) && positive(f.step) &&
               thread_offset(f.begin) && !read_outside(f.local, whole);
        // (Its threads start one apart, so adjacent threads touch adjacent elements of a row.)
    }

    // A stridable loop rewritten as a uniform loop over its first thread's index.
    StmtRef strided(const stmt::For& f) {
        ExprRef offset = thread_offset(f.begin);
        const int base = static_cast<int>(k.locals.size());
        k.locals.push_back({"thread_base", DType::i32});
        u.varying_local.push_back(false);
        ExprRef tid = make(DType::i32, expr::Builtin{BuiltinKind::thread_index});
        ExprRef i = bin(BinOp::add, make(DType::i32, expr::Local{base}), tid);
        StmtRef guarded =
            make(stmt::If{bin(BinOp::lt, i, f.end),
                          make(stmt::Seq{{make(stmt::Let{f.local, i}), f.body}}), nullptr});
        return make(stmt::For{base, offset, f.end, f.step, guarded});
    }

    // Whether local `id` is named anywhere in the kernel outside the loop `loop`.
    bool read_outside(int id, const StmtRef& loop) const {
        bool outside = false;
        std::function<void(const StmtRef&)> visit = [&](const StmtRef& s) {
            if (!s || s == loop) return;
            if (const auto* q = std::get_if<stmt::Seq>(&s->node)) {
                for (const auto& i : q->items) visit(i);
                return;
            }
            if (const auto* f = std::get_if<stmt::For>(&s->node)) {
                for_each_local(make(stmt::For{f->local, f->begin, f->end, f->step, nullptr}),
                               [&](int l) { outside |= l == id; });
                visit(f->body);
                return;
            }
            if (const auto* c = std::get_if<stmt::If>(&s->node)) {
                outside |= names_local(c->cond, id);
                visit(c->then_body);
                visit(c->else_body);
                return;
            }
            for_each_local(s, [&](int l) { outside |= l == id; });
        };
        visit(k.body);
        return outside;
    }

    bool uniform_locals(const std::vector<int>& ids) const {
        for (int l : ids)
            if (!uniform_local(l)) return false;
        return true;
    }

    // Fills a thread step's `below` parts where its body is one if whose condition bounds the
    // thread index (see BlockStep).
    void find_bound(BlockStep& step) const {
        if (step.body.size() != 1) return;
        const auto* c = std::get_if<stmt::If>(&step.body[0]->node);
        if (!c || c->else_body) return;
        const auto* lt = std::get_if<expr::Binary>(&c->cond->node);
        if (!lt || lt->op != BinOp::lt || lt->a->type != DType::i32) return;
        const auto* sum = std::get_if<expr::Binary>(&lt->a->node);
        ExprRef offset;
        if (is_thread_index(lt->a))
            offset = i32(0);
        else if (sum && sum->op == BinOp::add && is_thread_index(sum->b) && uniform(sum->a))
            offset = sum->a;
        else if (sum && sum->op == BinOp::add && is_thread_index(sum->a) && uniform(sum->b))
            offset = sum->b;
        if (!offset || !uniform(lt->b) || reads_memory(offset) || reads_memory(lt->b)) return;
        step.below = lt->a;
        step.below_offset = offset;
        step.below_end = lt->b;
        step.guarded = c->then_body;
    }

    static bool reads_memory(const ExprRef& e) {
        bool found = false;
        walk(e, [&](const ExprRef& n) { found |= std::holds_alternative<expr::Load>(n->node); });
        return found;
    }

    BlockSteps region(const StmtRef& s) {
        BlockSteps steps;
        std::vector<StmtRef> batch;
        auto flush = [&] {
            if (batch.empty()) return;
            steps.push_back(
                {BlockStep::Kind::threads, std::move(batch), nullptr, {}, {}, thread_loops++});
            find_bound(steps.back());
            batch.clear();
        };
        auto step = [&](BlockStep::Kind kind, const StmtRef& st, BlockSteps inner,
                        BlockSteps else_inner) {
            flush();
            steps.push_back({kind, {}, st, std::move(inner), std::move(else_inner), 0});
        };
        std::function<void(const StmtRef&)> item = [&](const StmtRef& i) {
            if (!i) return;
            std::visit(
                [&](const auto& n) {
                    using N = std::decay_t<decltype(n)>;
                    if constexpr (std::is_same_v<N, stmt::Seq>) {
                        for (const auto& x : n.items) item(x);
                    } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                        flush();
                    } else if constexpr (std::is_same_v<N, stmt::Let> ||
                                         std::is_same_v<N, stmt::Assign>) {
                        if (uniform_local(n.local))
                            step(BlockStep::Kind::uniform, i, {}, {});
                        else
                            batch.push_back(i);
                    } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                        if (uniform_locals(n.locals))
                            step(BlockStep::Kind::uniform, i, {}, {});
                        else
                            batch.push_back(i);
                    } else if constexpr (std::is_same_v<N, stmt::For>) {
                        if (hoist(n)) {
                            step(BlockStep::Kind::loop, i, region(n.body), {});
                        } else if (stridable(n, i)) {
                            StmtRef r = strided(n);
                            rewritten[i.get()] = r;
                            const auto& f = std::get<stmt::For>(r->node);
                            step(BlockStep::Kind::loop, r, region(f.body), {});
                        } else {
                            batch.push_back(i);
                        }
                    } else if constexpr (std::is_same_v<N, stmt::If>) {
                        // A uniform condition is tested once, around its arms' thread loops: in
                        // a thread loop the compiler would mask every lane's accesses (masked
                        // scatters and gathers instead of vector stores and loads).
                        if (uniform(n.cond))
                            step(BlockStep::Kind::branch, i, region(n.then_body),
                                 region(n.else_body));
                        else
                            batch.push_back(i);
                    } else {
                        batch.push_back(i);
                    }
                },
                i->node);
        };
        item(s);
        flush();
        return steps;
    }
};

// Where each local and per-thread array lives, from where the steps name them. A local is
// private to the thread loops that name it when no value of it flows into any of them; an
// array, when one thread loop that runs once per block names it. False where a thread loop gives
// a value to a local that uniform work reads (the plan must then keep uniform loops outside).
bool assign_homes(ThreadPlan& plan) {
    const size_t locals = plan.kernel.locals.size(), arrays = plan.kernel.arrays.size();
    std::vector<bool> in_block(locals, false), carried(locals, false), assigned(locals, false);
    std::vector<std::set<int>> local_loops(locals), array_loops(arrays);
    std::vector<bool> array_in_repeated(arrays, false);
    std::function<void(const BlockSteps&, bool)> visit = [&](const BlockSteps& steps,
                                                             bool repeated) {
        for (const BlockStep& s : steps) {
            switch (s.kind) {
                case BlockStep::Kind::threads: {
                    std::set<int> named;
                    for (const auto& b : s.body) {
                        for_each_local(b, [&](int l) { named.insert(l); });
                        for_each_array(b, [&](int a) {
                            array_loops[static_cast<size_t>(a)].insert(s.id);
                            if (repeated) array_in_repeated[static_cast<size_t>(a)] = true;
                        });
                    }
                    for (const auto& b : s.body)
                        for_each_stmt(b, [&](const StmtNode& n) {
                            auto mark = [&](int l) { assigned[static_cast<size_t>(l)] = true; };
                            if (const auto* x = std::get_if<stmt::Let>(&n.node)) mark(x->local);
                            if (const auto* x = std::get_if<stmt::Assign>(&n.node)) mark(x->local);
                            if (const auto* x = std::get_if<stmt::For>(&n.node)) mark(x->local);
                            if (const auto* x = std::get_if<stmt::LoadVector>(&n.node))
                                for (int l : x->locals) mark(l);
                        });
                    const std::vector<bool> live = live_in(s.body, locals);
                    for (int l : named) {
                        local_loops[static_cast<size_t>(l)].insert(s.id);
                        if (live[static_cast<size_t>(l)]) carried[static_cast<size_t>(l)] = true;
                    }
                    break;
                }
                case BlockStep::Kind::uniform:
                    for_each_local(s.stmt, [&](int l) { in_block[static_cast<size_t>(l)] = true; });
                    break;
                case BlockStep::Kind::loop: {
                    const auto& f = std::get<stmt::For>(s.stmt->node);
                    for_each_local(make(stmt::For{f.local, f.begin, f.end, f.step, nullptr}),
                                   [&](int l) { in_block[static_cast<size_t>(l)] = true; });
                    visit(s.inner, true);
                    break;
                }
                case BlockStep::Kind::branch: {
                    const auto& c = std::get<stmt::If>(s.stmt->node);
                    walk(c.cond, [&](const ExprRef& n) {
                        if (const auto* l = std::get_if<expr::Local>(&n->node))
                            in_block[static_cast<size_t>(l->id)] = true;
                    });
                    visit(s.inner, repeated);
                    visit(s.else_inner, repeated);
                    break;
                }
            }
        }
    };
    visit(plan.steps, false);
    for (size_t l = 0; l < locals; ++l)
        if (in_block[l] && assigned[l]) return false;
    plan.local_home.assign(locals, Home::block);
    plan.loop_locals.assign(static_cast<size_t>(plan.thread_loops), {});
    plan.loop_arrays.assign(static_cast<size_t>(plan.thread_loops), {});
    for (size_t l = 0; l < locals; ++l) {
        if (in_block[l] || local_loops[l].empty()) continue;
        if (carried[l]) {
            plan.local_home[l] = Home::per_thread;
            continue;
        }
        plan.local_home[l] = Home::thread_loop;
        for (int loop : local_loops[l])
            plan.loop_locals[static_cast<size_t>(loop)].push_back(static_cast<int>(l));
    }
    plan.array_home.assign(arrays, Home::per_thread);
    for (size_t a = 0; a < arrays; ++a) {
        if (array_loops[a].size() == 1 && !array_in_repeated[a]) {
            plan.array_home[a] = Home::thread_loop;
            plan.loop_arrays[static_cast<size_t>(*array_loops[a].begin())].push_back(
                static_cast<int>(a));
        }
    }
    return true;
}

// Whether some local or array keeps values of every thread across thread loops.
bool carries_values(const ThreadPlan& plan) {
    auto per_thread = [](Home h) { return h == Home::per_thread; };
    return std::any_of(plan.local_home.begin(), plan.local_home.end(), per_thread) ||
           std::any_of(plan.array_home.begin(), plan.array_home.end(), per_thread);
}

// Locals a thread loop can compute again instead of keeping them in a per-thread array: varying
// locals given their one value outside every loop, from values that read no memory, other such
// locals and uniform locals likewise given one value outside every loop. (Their values are then
// the same wherever a later thread loop reads them; a per-thread array would hide from the
// compiler that `row * n + thread_index` steps by one between threads.)
struct Recomputable {
    const Kernel& k;
    const Uniformity& u;
    std::vector<ExprRef> value;  // by local id: its value where it is recomputable

    Recomputable(const Kernel& kernel, const Uniformity& uniformity)
        : k(kernel), u(uniformity), value(kernel.locals.size()) {
        const std::vector<ExprRef> single = single_lets(k);
        std::vector<bool> outside_loops(k.locals.size(), false);
        std::function<void(const StmtRef&)> visit = [&](const StmtRef& s) {
            if (!s) return;
            if (const auto* q = std::get_if<stmt::Seq>(&s->node)) {
                for (const auto& i : q->items) visit(i);
            } else if (const auto* c = std::get_if<stmt::If>(&s->node)) {
                visit(c->then_body);
                visit(c->else_body);
            } else if (const auto* l = std::get_if<stmt::Let>(&s->node)) {
                outside_loops[static_cast<size_t>(l->local)] = true;
            }
        };
        visit(k.body);
        // Locals are numbered as they are made, so a value names only lower-numbered locals.
        std::vector<bool> stable(k.locals.size(), false);
        for (size_t l = 0; l < k.locals.size(); ++l) {
            const ExprRef& v = single[l];
            if (!v || !outside_loops[l]) continue;
            bool ok = true;
            walk(v, [&](const ExprRef& n) {
                if (std::holds_alternative<expr::Load>(n->node) ||
                    std::holds_alternative<expr::ShuffleXor>(n->node))
                    ok = false;
                if (const auto* x = std::get_if<expr::Local>(&n->node))
                    ok = ok && static_cast<size_t>(x->id) < l && stable[static_cast<size_t>(x->id)];
            });
            stable[l] = ok;
            if (ok && u.varying_local.at(l)) value[l] = v;
        }
    }

    // Puts `let l = value` first in the body of every thread loop that may read a recomputable
    // l before giving it a value (with the locals its value names, in order).
    void place(BlockSteps& steps) const {
        for (BlockStep& s : steps) {
            place(s.inner);
            place(s.else_inner);
            if (s.kind != BlockStep::Kind::threads) continue;
            std::set<int> needed;
            std::function<void(int)> need = [&](int l) {
                if (!value[static_cast<size_t>(l)] || !needed.insert(l).second) return;
                walk(value[static_cast<size_t>(l)], [&](const ExprRef& n) {
                    if (const auto* x = std::get_if<expr::Local>(&n->node)) need(x->id);
                });
            };
            const std::vector<bool> live = live_in(s.body, value.size());
            for (const auto& b : s.body)
                for_each_local(b, [&](int l) {
                    if (value[static_cast<size_t>(l)] && live[static_cast<size_t>(l)]) need(l);
                });
            std::vector<StmtRef> lets;
            for (int l : needed)  // ascending: each value's locals come first
                lets.push_back(make(stmt::Let{l, value[static_cast<size_t>(l)]}));
            if (lets.empty()) continue;
            s.body.insert(s.body.begin(), lets.begin(), lets.end());
            if (s.guarded) {  // the test needs none of them: its sum is uniform + thread index
                lets.push_back(s.guarded);
                s.guarded = make(stmt::Seq{lets});
            }
        }
    }
};

}  // namespace

ThreadPlan plan_threads(const Kernel& kernel) {
    for (bool inside : {true, false}) {
        ThreadPlan plan;
        plan.kernel = kernel;
        Planner p{plan.kernel, analyze_uniformity(plan.kernel), inside};
        plan.steps = p.region(plan.kernel.body);
        plan.kernel.body = p.with_rewrites(plan.kernel.body);
        plan.thread_loops = p.thread_loops;
        Recomputable(plan.kernel, p.u).place(plan.steps);
        plan.strips = !contains_barrier(plan.kernel.body);
        if (assign_homes(plan)) {
            plan.strips = plan.strips && carries_values(plan);
            return plan;
        }
    }
    fail("kernel {}: no thread-loop plan gives every local one home", kernel.name);
}

}  // namespace kiln::codegen
