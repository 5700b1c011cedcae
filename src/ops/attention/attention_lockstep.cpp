// attention's lockstep form (attention_parts.hpp): one thread per query row, the block's rows of
// one (batch, head) walking the keys together, so each key's K and V rows are read once for the
// block and, on a CPU, the rows are the lanes of one vector. A row's queries and accumulators
// live in tiles laid out dimension-major (a dimension's rows adjacent), so the loops over the
// head's dimensions stay loops: the scores of kScoreKeys keys advance side by side over d, and
// the value product keeps kValueDims accumulators over a block's keys, in registers on a CPU.
// Each score and each accumulator keeps the op's order (one fma chain over d, one over keys).
#include <algorithm>
#include <vector>

#include "base/ceil_div.hpp"
#include "kiln/math.hpp"
#include "ops/attention/attention_parts.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops::attention_detail {

int lockstep_dims(int head_dim) {
    return ceil_div(head_dim, kValueDims) * kValueDims;
}

int64_t lockstep_shared_bytes(const AttentionSchedule& s, int head_dim) {
    return int64_t{4} * s.rows * (kKeyBlock + head_dim + lockstep_dims(head_dim));
}

void lockstep_form(KernelBuilder& k, const Params& p, const AttentionTypes& t,
                   const AttentionSchedule& s) {
    const int D = t.head_dim, R = s.rows;
    const auto [bh, i0] = query_block(k, p, R);
    Var th = k.let(k.thread_index(), "t");
    Var i = k.let(i0 + th, "i");  // the thread's row; rows past seq_q compute, never store
    Var q_at = k.let((bh * p.seq_q + min(i.expr(), p.seq_q - 1)) * D, "q_at");
    Var kv_at = k.let(kv_row(p, bh) * p.seq_k * D, "kv_at");
    const std::optional<Expr> keys = batch_keys(k, p, bh);
    Var limit = k.let(key_limit(p, keys, i), "limit");
    // Keys every row of the block sees (limits grow with the row), and keys any stored row sees.
    Var shared_keys = k.let(key_limit(p, keys, i0), "shared_keys");
    Var end = k.let(key_limit(p, keys, min(i0 + R, p.seq_q) - 1), "end");
    // Row th's value of dimension d (or key j) at [d * R + th]: adjacent rows adjacent.
    Memory q = k.shared(DType::f32, int64_t{D} * R, "q_rows");
    Memory acc = k.shared(DType::f32, int64_t{lockstep_dims(D)} * R, "acc_rows");
    Memory scores = k.shared(DType::f32, int64_t{kKeyBlock} * R, "scores");
    k.for_(0, D, [&](Expr d) { q[d * R + th] = to_f32(p.q(q_at + d)); });
    k.for_(0, lockstep_dims(D), [&](Expr d) { acc[d * R + th] = constant(DType::f32, 0.0f); });
    Var m = k.let(DType::f32, kMinusInf, "m");
    Var l = k.let(DType::f32, 0.0f, "l");
    // One key block from t0 over `keys` keys (uniform). Whole: every row sees every key of the
    // block. Otherwise a row takes the keys below its own limit and skips a block with none.
    auto key_block = [&](const Expr& t0, const Expr& keys, bool whole) {
        Var own = k.let(whole ? keys : min(max(limit - t0, 0), keys), "own_keys");
        Var m_new = k.let(m.expr(), "m_new");
        // Scores of keys j0 ... j0 + kScoreKeys - 1 side by side (past the block's last key, its
        // last key again, never stored).
        k.for_(
            0, keys,
            [&](Expr j0) {
                std::vector<Var> key, dot;
                for (int g = 0; g < kScoreKeys; ++g) {
                    Expr j = whole ? j0 + g : min(j0 + g, keys - 1);
                    key.push_back(k.let(kv_at + (t0 + j) * D, "key"));
                    dot.push_back(k.let(DType::f32, 0.0f, "dot"));
                }
                k.for_(0, D, [&](Expr d) {
                    Var qd = k.let(q[d * R + th], "q_d");
                    for (int g = 0; g < kScoreKeys; ++g)
                        dot[g] = fma(qd, to_f32(p.k(key[g] + d)), dot[g]);
                });
                for (int g = 0; g < kScoreKeys; ++g) {
                    Expr j = j0 + g;
                    auto score = [&] {
                        Var sj = k.let(dot[g] * p.scale, "s_j");
                        scores[j * R + th] = sj;
                        m_new =
                            whole ? max(m_new, sj) : select(j < own, max(m_new, sj), m_new.expr());
                    };
                    if (whole || g == 0)  // whole blocks are whole groups
                        score();
                    else
                        k.if_(j < keys, score);
                }
            },
            kScoreKeys);
        Var c = k.let(rescale(m, m_new), "c");
        Var any = k.let(own > 0, "any");
        l = whole ? l * c : select(any, l * c, l.expr());
        // Each key's weight once (in the scores' place), added to l in key order.
        k.for_(0, keys, [&](Expr j) {
            Var pj = k.let(weight(scores[j * R + th] - m_new), "p_j");
            scores[j * R + th] = pj;
            l = whole ? l + pj : select(j < own, l + pj, l.expr());
        });
        // The value product, kValueDims accumulators at a time over the block's keys. In a tested
        // block V's row is read whole first (one value for the block), so the selects choose
        // between plain values (GCC vectorizes neither otherwise).
        k.for_(
            0, lockstep_dims(D),
            [&](Expr d0) {
                std::vector<Var> a;
                for (int x = 0; x < kValueDims; ++x) {
                    Var ax = k.let(acc[(d0 + x) * R + th], "a");
                    a.push_back(k.let(whole ? ax * c : select(any, ax * c, ax.expr()), "a"));
                }
                k.for_(0, keys, [&](Expr j) {
                    Var value = k.let(kv_at + (t0 + j) * D, "value");  // uniform: first
                    Var pj = k.let(scores[j * R + th], "p_j");
                    // Dimensions past D (the last chunk's) read the row's last value, never stored.
                    auto v_at = [&](int x) {
                        return D % kValueDims == 0 ? value + d0 + x : value + min(d0 + x, D - 1);
                    };
                    if (whole) {
                        for (int x = 0; x < kValueDims; ++x)
                            a[x] = fma(pj, to_f32(p.v(v_at(x))), a[x]);
                        return;
                    }
                    std::vector<Var> v;
                    for (int x = 0; x < kValueDims; ++x)
                        v.push_back(k.let(to_f32(p.v(v_at(x))), "v"));
                    Var has = k.let(j < own, "has");
                    for (int x = 0; x < kValueDims; ++x)
                        a[x] = select(has, fma(pj, v[x], a[x]), a[x].expr());
                });
                for (int x = 0; x < kValueDims; ++x) acc[(d0 + x) * R + th] = a[x];
            },
            kValueDims);
        m = m_new;
    };
    k.for_(
        0, end,
        [&](Expr t0) {
            k.if_(
                t0 + kKeyBlock <= shared_keys,
                [&] { key_block(t0, constant(DType::i32, kKeyBlock), true); },
                [&] { key_block(t0, min(end - t0, kKeyBlock), false); });
        },
        kKeyBlock);
    k.if_(i < p.seq_q,
          [&] { k.for_(0, D, [&](Expr d) { p.store(q_at + d, acc[d * R + th] / l); }); });
}

}  // namespace kiln::ops::attention_detail
