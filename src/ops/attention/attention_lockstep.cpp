// attention's lockstep form (attention_parts.hpp): one thread per query row, the block's rows of
// one (batch, head) walking the keys together, so each key's K and V rows are read once for the
// block and, on a CPU, the rows are the lanes of one vector.
#include <vector>

#include "kiln/math.hpp"
#include "ops/attention/attention_parts.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops::attention_detail {

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
    std::vector<Var> q, acc;
    for (int d = 0; d < D; ++d) q.push_back(k.let(to_f32(p.q(q_at + d)), "q"));
    for (int d = 0; d < D; ++d) acc.push_back(k.let(DType::f32, 0.0f, "acc"));
    Var m = k.let(DType::f32, kMinusInf, "m");
    Var l = k.let(DType::f32, 0.0f, "l");
    // The key block's scores, key-major: a key's rows adjacent, each thread reading only its own.
    Memory scores = k.shared(DType::f32, int64_t{kKeyBlock} * R, "scores");
    // One key block from t0 over `keys` keys (uniform). Whole: every row sees every key of the
    // block. Otherwise a row takes the keys below its own limit and skips a block with none.
    auto key_block = [&](const Expr& t0, const Expr& keys, bool whole) {
        Var own = k.let(whole ? keys : min(max(limit - t0, 0), keys), "own_keys");
        Var m_new = k.let(m.expr(), "m_new");
        k.for_(0, keys, [&](Expr j) {
            Var key = k.let(kv_at + (t0 + j) * D, "key");
            Var dot = k.let(DType::f32, 0.0f, "dot");
            for (int d = 0; d < D; ++d) dot = fma(q[d], to_f32(p.k(key + d)), dot);
            Var sj = k.let(dot * p.scale, "s_j");
            scores[j * R + th] = sj;
            m_new = whole ? max(m_new, sj) : select(j < own, max(m_new, sj), m_new.expr());
        });
        Var c = k.let(rescale(m, m_new), "c");
        Var any = k.let(own > 0, "any");
        l = whole ? l * c : select(any, l * c, l.expr());
        for (Var& a : acc) a = whole ? a * c : select(any, a * c, a.expr());
        k.for_(0, keys, [&](Expr j) {
            Var pj = k.let(weight(scores[j * R + th] - m_new), "p_j");
            // V's row after p_j, so that on a CPU the two run as two vector loops; in a tested
            // block V's row is read whole first (one value for the block), so the selects choose
            // between plain values (GCC vectorizes neither otherwise).
            Var value = k.let(kv_at + (t0 + j) * D, "value");
            if (whole) {
                l = l + pj;
                for (int d = 0; d < D; ++d) acc[d] = fma(pj, to_f32(p.v(value + d)), acc[d]);
                return;
            }
            std::vector<Var> v;
            for (int d = 0; d < D; ++d) v.push_back(k.let(to_f32(p.v(value + d)), "v"));
            Var has = k.let(j < own, "has");
            l = select(has, l + pj, l.expr());
            for (int d = 0; d < D; ++d) acc[d] = select(has, fma(pj, v[d], acc[d]), acc[d].expr());
        });
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
    k.if_(i < p.seq_q, [&] {
        for (int d = 0; d < D; ++d) p.store(q_at + d, acc[d] / l);
    });
}

}  // namespace kiln::ops::attention_detail
