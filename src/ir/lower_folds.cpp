// lower_folds: the canonical fold as loops, a local halving tree and a cross-thread tree.
#include "ir/lower_folds.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "ir/simplify.hpp"
#include "ir/visit.hpp"

namespace kiln::ir {

ExprRef fold_identity(FoldOp op, DType type) {
    const double inf = std::numeric_limits<double>::infinity();
    if (op == FoldOp::sum) return int_const(type, 0);
    if (op == FoldOp::prod) return int_const(type, 1);
    const bool lowest = op == FoldOp::max;
    if (is_float(type)) return float_const(type, lowest ? -inf : inf);
    switch (type) {
        case DType::i8:
            return int_const(type, lowest ? -128 : 127);
        case DType::u8:
            return int_const(type, lowest ? 0 : 255);
        case DType::i32:
            return int_const(type, lowest ? INT32_MIN : INT32_MAX);
        case DType::u32:
            return int_const(type, lowest ? 0 : UINT32_MAX);
        default:
            return int_const(type, lowest ? std::numeric_limits<int64_t>::min()
                                          : std::numeric_limits<int64_t>::max());
    }
}

BinOp fold_binop(FoldOp op) {
    switch (op) {
        case FoldOp::sum:
            return BinOp::add;
        case FoldOp::prod:
            return BinOp::mul;
        case FoldOp::max:
            return BinOp::max;
        case FoldOp::min:
            break;
    }
    return BinOp::min;
}

ExprRef fold_combine(FoldOp op, const ExprRef& a, const ExprRef& b) {
    return make(a->type, expr::Binary{fold_binop(op), a, b});
}

namespace {

// Lanes per thread up to which each lane gets its own register.
constexpr int kMaxRegisterLanes = 16;

ExprRef i32(int64_t v) {
    return int_const(DType::i32, v);
}
ExprRef bin(BinOp op, const ExprRef& a, const ExprRef& b) {
    return make(is_comparison(op) ? DType::boolean : a->type, expr::Binary{op, a, b});
}
ExprRef local(const Kernel& k, int id) {
    return make(k.locals[static_cast<size_t>(id)].type, expr::Local{id});
}

struct Lowerer {
    Kernel& k;
    int warp_size;
    bool uniform_rounds;  // every thread steps through the same rounds (see lower_folds.hpp)
    std::map<DType, int> exchange_tile;  // one shared tile per fold type, reused by every fold
    int tile_folds = 0;                  // folds in the kernel that go through an exchange tile
    int tile_folds_seen = 0;             // ... lowered so far, in program order
    int loop_depth = 0;                  // For loops around the statement being lowered

    bool uses_tile(const FoldSpec& f) const { return f.threads > 1 && warp_size < f.threads; }

    int count_tile_folds(const StmtRef& s) const {
        int c = 0;
        for_each_stmt(s, [&](const StmtNode& n) {
            const auto* f = std::get_if<stmt::Fold>(&n.node);
            c += f && uses_tile(f->spec) ? 1 : 0;
        });
        return c;
    }

    int new_local(DType t, const std::string& name) {
        k.locals.push_back({name, t});
        return static_cast<int>(k.locals.size() - 1);
    }

    int tile_for(DType t) {
        auto it = exchange_tile.find(t);
        if (it != exchange_tile.end()) return it->second;
        k.tiles.push_back({"fold_exchange", t, k.block_size, MemSpace::shared});
        const int id = static_cast<int>(k.tiles.size() - 1);
        exchange_tile[t] = id;
        return id;
    }

    // One element of the fold: index = idx, run the body, acc = op(acc, value); guarded by
    // idx < n unless the caller knows it holds.
    StmtRef element(const stmt::Fold& f, const ExprRef& idx, int acc, const ExprRef& extent,
                    bool guard) {
        std::vector<StmtRef> items;
        items.push_back(make(stmt::Let{f.index, idx}));
        items.push_back(f.body);
        items.push_back(make(stmt::Assign{acc, fold_combine(f.spec.op, local(k, acc), f.value)}));
        StmtRef seq = make(stmt::Seq{std::move(items)});
        return guard ? make(stmt::If{bin(BinOp::lt, idx, extent), seq, nullptr}) : seq;
    }

    // Folds the chunks of the lanes `lanes[q]` into `accs[q]`, every lane in chunk order. A
    // round is W*V consecutive elements, one chunk per lane. The main loop takes `unroll` whole
    // rounds a step with no bounds checks, so all their loads are independent and in flight
    // together; a checked tail loop takes what is left, one round a step.
    void lane_loops(std::vector<StmtRef>& out, const stmt::Fold& f,
                    const std::vector<ExprRef>& lanes, const std::vector<int>& accs,
                    const ExprRef& extent) {
        const int V = f.spec.chunk, W = f.spec.lanes, U = std::max(1, f.spec.unroll);
        const int64_t round = static_cast<int64_t>(W) * V;
        // One lane: `base` is the lane's own chunk; several, or rounds the same in every thread:
        // `base` is the round's first element.
        const bool single = lanes.size() == 1 && !uniform_rounds;
        const int base = new_local(DType::i32, "chunk");
        auto step = [&](int rounds, bool checked) {
            std::vector<StmtRef> body;
            for (int r = 0; r < rounds; ++r)
                for (size_t q = 0; q < lanes.size(); ++q) {
                    ExprRef start = local(k, base);
                    if (!single) start = bin(BinOp::add, start, bin(BinOp::mul, lanes[q], i32(V)));
                    if (r) start = bin(BinOp::add, start, i32(r * round));
                    for (int u = 0; u < V; ++u) {
                        ExprRef idx = u == 0 ? start : bin(BinOp::add, start, i32(u));
                        body.push_back(element(f, idx, accs[q], extent, checked));
                    }
                }
            return make(stmt::Seq{std::move(body)});
        };
        // Whole steps: every index of the step is below n. The last index a step touches is
        // base + (U-1)*W*V + V-1 for one lane, base + U*W*V - 1 for a round of lanes.
        const int64_t span = single ? (U - 1) * round + V : U * round;
        ExprRef main_end = bin(BinOp::sub, extent, i32(span - 1));
        ExprRef begin = single ? bin(BinOp::mul, lanes[0], i32(V)) : i32(0);
        if (straight_line(out, f, begin, span, base, step)) return;
        out.push_back(make(stmt::For{base, begin, main_end, i32(round * U), step(U, false)}));
        out.push_back(make(stmt::For{base, local(k, base), extent, i32(round), step(1, true)}));
    }

    // lane_loops without their loops, where the fold's extent is a compile-time constant and
    // both loops run at most once, the same number of times in every thread: one whole step
    // and one checked step at most, in that order. A loop whose start is a thread's lane cannot
    // be bounded by the compiler, which then writes it as a general loop with a remainder (NVCC:
    // about 40 instructions and six branches for rms_norm's fold of its 256 lane sums). `begin`
    // is the first element of the lane (one lane: at most (W-1)*V) or of the round (several
    // lanes: 0).
    template <typename Step>
    bool straight_line(std::vector<StmtRef>& out, const stmt::Fold& f, const ExprRef& begin,
                       int64_t span, int base, const Step& step) {
        int64_t n = 0;
        if (!is_const(simplify(f.extent), &n)) return false;
        const int V = f.spec.chunk, W = f.spec.lanes, U = std::max(1, f.spec.unroll);
        const int64_t round = static_cast<int64_t>(W) * V, stride = round * U;
        int64_t last_begin = 0;
        if (!is_const(begin, &last_begin)) last_begin = static_cast<int64_t>(W - 1) * V;
        auto whole_steps = [&](int64_t b) {
            return b + span <= n ? (n - span - b) / stride + 1 : 0;
        };
        const int64_t whole = whole_steps(0);
        auto checked_steps = [&](int64_t b) {
            const int64_t from = b + whole * stride;
            return from < n ? (n - from + round - 1) / round : 0;
        };
        const int64_t checked = checked_steps(0);
        if (whole > 1 || whole != whole_steps(last_begin) || checked > 1 ||
            checked != checked_steps(last_begin))
            return false;
        if (whole == 1) {
            out.push_back(make(stmt::Let{base, begin}));
            out.push_back(step(U, false));
        }
        if (checked == 1) {
            if (whole == 1)
                out.push_back(
                    make(stmt::Assign{base, bin(BinOp::add, local(k, base), i32(stride))}));
            else
                out.push_back(make(stmt::Let{base, begin}));
            out.push_back(step(1, true));
        }
        return true;
    }

    // Many lanes per thread, rounds the same in every thread: the lanes in a per-thread array,
    // each round's chunks folded lane by lane in a loop over the lanes (one lane's elements
    // still in order, so the lanes may run as SIMD lanes), then the tree's thread-local levels
    // as a loop per level. Leaves the thread's tree node in `acc`.
    void array_lanes(std::vector<StmtRef>& out, const stmt::Fold& f, const ExprRef& t, int acc,
                     const ExprRef& extent) {
        const int V = f.spec.chunk, W = f.spec.lanes, T = f.spec.threads, L = W / T;
        const int U = std::max(1, f.spec.unroll);
        const int64_t round = static_cast<int64_t>(W) * V;
        const DType type = k.locals[static_cast<size_t>(acc)].type;
        k.arrays.push_back({"lanes", type, L, MemSpace::local});
        const MemRef lanes{MemSpace::local, static_cast<int>(k.arrays.size() - 1)};
        auto lane_loop = [&](const std::function<StmtRef(const ExprRef&)>& body, int64_t count) {
            const int q = new_local(DType::i32, "q");
            return make(stmt::For{q, i32(0), i32(count), i32(1), body(local(k, q))});
        };
        auto lane = [&](const ExprRef& q) { return make(type, expr::Load{lanes, q}); };
        out.push_back(lane_loop(
            [&](const ExprRef& q) {
                return make(stmt::Store{lanes, q, fold_identity(f.spec.op, type)});
            },
            L));
        const int base = new_local(DType::i32, "chunk");
        // Rounds r of a step: lane q takes the V elements from base + r*round + (t + q*T)*V.
        auto step = [&](int rounds, bool checked) {
            std::vector<StmtRef> body;
            for (int r = 0; r < rounds; ++r)
                body.push_back(lane_loop(
                    [&](const ExprRef& q) {
                        ExprRef start =
                            bin(BinOp::add, local(k, base),
                                bin(BinOp::mul, bin(BinOp::add, t, bin(BinOp::mul, q, i32(T))),
                                    i32(V)));
                        if (r) start = bin(BinOp::add, start, i32(r * round));
                        std::vector<StmtRef> chunk;
                        for (int u = 0; u < V; ++u) {
                            ExprRef idx = u == 0 ? start : bin(BinOp::add, start, i32(u));
                            std::vector<StmtRef> items;
                            items.push_back(make(stmt::Let{f.index, idx}));
                            items.push_back(f.body);
                            items.push_back(make(
                                stmt::Store{lanes, q, fold_combine(f.spec.op, lane(q), f.value)}));
                            StmtRef seq = make(stmt::Seq{std::move(items)});
                            chunk.push_back(
                                checked ? make(stmt::If{bin(BinOp::lt, idx, extent), seq, nullptr})
                                        : seq);
                        }
                        return make(stmt::Seq{std::move(chunk)});
                    },
                    L));
            return make(stmt::Seq{std::move(body)});
        };
        ExprRef main_end = bin(BinOp::sub, extent, i32(U * round - 1));
        out.push_back(make(stmt::For{base, i32(0), main_end, i32(round * U), step(U, false)}));
        out.push_back(make(stmt::For{base, local(k, base), extent, i32(round), step(1, true)}));
        // Thread-local tree levels s = W/2 ... T: lane t+q*T takes lane t+(q+s/T)*T.
        for (int s = W / 2; s >= T; s /= 2)
            out.push_back(lane_loop(
                [&](const ExprRef& q) {
                    ExprRef other = lane(bin(BinOp::add, q, i32(s / T)));
                    return make(stmt::Store{lanes, q, fold_combine(f.spec.op, lane(q), other)});
                },
                s / T));
        out.push_back(make(stmt::Let{acc, lane(i32(0))}));
    }

    StmtRef lower(const stmt::Fold& f) {
        const int W = f.spec.lanes, T = f.spec.threads, L = W / T;
        const DType type = k.locals[static_cast<size_t>(f.result)].type;
        std::vector<StmtRef> out;
        // The fold's extent, evaluated once.
        const int n = new_local(DType::i32, "fold_n");
        out.push_back(make(stmt::Let{n, f.extent}));
        const ExprRef extent = local(k, n);
        // t: this thread's index within its group of T.
        ExprRef tid = make(DType::i32, expr::Builtin{BuiltinKind::thread_index});
        ExprRef t =
            T == 1 ? i32(0) : (T == k.block_size ? tid : bin(BinOp::bit_and, tid, i32(T - 1)));
        const int acc = new_local(type, "acc");
        auto lane_of = [&](int q) {  // lane j = t + q*T
            return q == 0 ? t : bin(BinOp::add, t, i32(static_cast<int64_t>(q) * T));
        };
        if (L <= kMaxRegisterLanes) {
            // Each lane in its own local, combined by the tree's thread-local levels.
            std::vector<int> accs;
            std::vector<ExprRef> lanes;
            for (int q = 0; q < L; ++q) {
                accs.push_back(q == 0 ? acc : new_local(type, "acc"));
                lanes.push_back(lane_of(q));
                out.push_back(make(stmt::Let{accs.back(), fold_identity(f.spec.op, type)}));
            }
            lane_loops(out, f, lanes, accs, extent);
            for (int s = W / 2; s >= T; s /= 2)
                for (int qq = 0; qq < s / T; ++qq)
                    out.push_back(make(stmt::Assign{
                        accs[static_cast<size_t>(qq)],
                        fold_combine(f.spec.op, local(k, accs[static_cast<size_t>(qq)]),
                                     local(k, accs[static_cast<size_t>(qq + s / T)]))}));
        } else if (uniform_rounds) {
            array_lanes(out, f, t, acc, extent);
        } else {
            // Many lanes per thread: a per-thread array, one lane at a time.
            k.arrays.push_back({"lanes", type, L, MemSpace::local});
            const MemRef lanes{MemSpace::local, static_cast<int>(k.arrays.size() - 1)};
            const int q = new_local(DType::i32, "q");
            std::vector<StmtRef> per_lane;
            per_lane.push_back(make(stmt::Let{acc, fold_identity(f.spec.op, type)}));
            ExprRef lane = bin(BinOp::add, t, bin(BinOp::mul, local(k, q), i32(T)));
            lane_loops(per_lane, f, {lane}, {acc}, extent);
            per_lane.push_back(make(stmt::Store{lanes, local(k, q), local(k, acc)}));
            out.push_back(
                make(stmt::For{q, i32(0), i32(L), i32(1), make(stmt::Seq{std::move(per_lane)})}));
            // Thread-local tree levels s = W/2 ... T: lane t+q*T takes lane t+(q+s/T)*T.
            for (int s = W / 2; s >= T; s /= 2) {
                for (int qq = 0; qq < s / T; ++qq) {
                    auto a = make(type, expr::Load{lanes, i32(qq)});
                    auto b = make(type, expr::Load{lanes, i32(qq + s / T)});
                    out.push_back(make(stmt::Store{lanes, i32(qq), fold_combine(f.spec.op, a, b)}));
                }
            }
            out.push_back(make(stmt::Assign{acc, make(type, expr::Load{lanes, i32(0)})}));
        }
        // Butterfly levels s = from/2 ... 1 over groups of `width` threads (warp shuffles): after
        // each level every thread holds its tree node, operands in tree order. The partner's
        // value is taken into a local first, so every thread shuffles unconditionally (a
        // shuffle inside each arm of the select would be a divergent shuffle to the compiler).
        auto butterfly = [&](std::vector<StmtRef>& into, int from, int width, const ExprRef& lane) {
            for (int s = from / 2; s >= 1; s /= 2) {
                const int other = new_local(type, "partner");
                into.push_back(
                    make(stmt::Let{other, make(type, expr::ShuffleXor{local(k, acc), s, width})}));
                auto upper = bin(BinOp::ne, bin(BinOp::bit_and, lane, i32(s)), i32(0));
                auto value = make(
                    type,
                    expr::Select{upper, fold_combine(f.spec.op, local(k, other), local(k, acc)),
                                 fold_combine(f.spec.op, local(k, acc), local(k, other))});
                into.push_back(make(stmt::Assign{acc, value}));
            }
        };
        bool result_given = false;
        if (T > 1 && warp_size >= T) {
            butterfly(out, T, T, t);
        } else if (T > 1) {
            const MemRef tile{MemSpace::shared, tile_for(type)};
            out.push_back(make(stmt::Store{tile, tid, local(k, acc)}));
            out.push_back(make(stmt::Barrier{}));
            if (warp_size > 1 && T > warp_size) {
                // Every warp finishes the tree itself, so no second barrier and no broadcast:
                // lane l of each warp reads the T/warp nodes l, l+warp, ... of its group,
                // combines them with the tree's levels down to the warp in registers, then
                // shuffles (the order of every operation is the tree's).
                const ExprRef lane = bin(BinOp::bit_and, tid, i32(warp_size - 1));
                const ExprRef first = bin(BinOp::add, bin(BinOp::sub, tid, t), lane);
                const int nodes = T / warp_size;
                std::vector<int> node(static_cast<size_t>(nodes));
                for (int q = 0; q < nodes; ++q) {
                    node[static_cast<size_t>(q)] = q == 0 ? acc : new_local(type, "node");
                    auto at = bin(BinOp::add, first, i32(static_cast<int64_t>(q) * warp_size));
                    out.push_back(make(
                        stmt::Let{node[static_cast<size_t>(q)], make(type, expr::Load{tile, at})}));
                }
                for (int half = nodes / 2; half >= 1; half /= 2)
                    for (int q = 0; q < half; ++q)
                        out.push_back(make(stmt::Assign{
                            node[static_cast<size_t>(q)],
                            fold_combine(f.spec.op, local(k, node[static_cast<size_t>(q)]),
                                         local(k, node[static_cast<size_t>(q + half)]))}));
                butterfly(out, warp_size, warp_size, lane);
            } else {
                // Without shuffles: every level through the tile, each followed by a barrier;
                // then every thread reads the root from the group's first slot.
                for (int s = T / 2; s >= 1; s /= 2) {
                    auto a = make(type, expr::Load{tile, tid});
                    auto b = make(type, expr::Load{tile, bin(BinOp::add, tid, i32(s))});
                    auto store = make(stmt::Store{tile, tid, fold_combine(f.spec.op, a, b)});
                    out.push_back(make(stmt::If{bin(BinOp::lt, t, i32(s)), store, nullptr}));
                    out.push_back(make(stmt::Barrier{}));
                }
                // The result straight from the tile: where the whole block folds, the slot is
                // the same in every thread, and so (to the uniformity analysis) is the result.
                out.push_back(make(
                    stmt::Let{f.result, make(type, expr::Load{tile, bin(BinOp::sub, tid, t)})}));
                result_given = true;
            }
            // A barrier frees the tile for the next fold; the kernel's last such fold, outside
            // any loop, has none after it.
            const bool last = ++tile_folds_seen == tile_folds && loop_depth == 0;
            if (!last) out.push_back(make(stmt::Barrier{}));
        }
        if (!result_given) out.push_back(make(stmt::Let{f.result, local(k, acc)}));
        return make(stmt::Seq{std::move(out)});
    }

    StmtRef walk(const StmtRef& s) {
        if (!s) return s;
        return std::visit(
            [&](const auto& n) -> StmtRef {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    std::vector<StmtRef> items;
                    for (const auto& i : n.items) items.push_back(walk(i));
                    return make(stmt::Seq{std::move(items)});
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    ++loop_depth;
                    StmtRef body = walk(n.body);
                    --loop_depth;
                    return make(stmt::For{n.local, n.begin, n.end, n.step, body});
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    return make(stmt::If{n.cond, walk(n.then_body), walk(n.else_body)});
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    // A fold inside a fold's body (one thread's, the segments of a long fold)
                    // is lowered first; the body runs once per element, as a loop's does.
                    stmt::Fold outer = n;
                    ++loop_depth;
                    outer.body = walk(n.body);
                    --loop_depth;
                    return lower(outer);
                } else {
                    return s;
                }
            },
            s->node);
    }
};

}  // namespace

Kernel lower_folds(const Kernel& kernel, int warp_size, bool uniform_rounds) {
    Kernel k = kernel;
    Lowerer l{k, warp_size, uniform_rounds, {}};
    l.tile_folds = l.count_tile_folds(kernel.body);
    k.body = l.walk(kernel.body);
    return k;
}

}  // namespace kiln::ir
