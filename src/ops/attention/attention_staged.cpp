// attention's staged form (attention_parts.hpp): per key block, the scores as a tiled product
// through shared tiles, the row statistics by one thread per row, and acc as a second tiled
// product.
#include <functional>
#include <vector>

#include "base/ceil_div.hpp"
#include "kiln/math.hpp"
#include "ops/attention/attention_parts.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops::attention_detail {
namespace {

// body(e) for this thread's elements e = t, t + threads, ... of `count` (the last round guarded).
void each_slot(KernelBuilder& k, int count, int threads, const std::function<void(Expr)>& body) {
    for (int n = 0; n * threads < count; ++n) {
        Expr e = k.thread_index() + n * threads;
        if ((n + 1) * threads <= count)
            body(e);
        else
            k.if_(e < count, [&] { body(e); });
    }
}

// The staged form's shared tiles: Q and K (kDimStep dims, d-major), the block's scores and then
// its p_j (j-major: a key's rows adjacent), V (kKeyStep keys, row-major) and per-row values.
struct Tiles {
    Memory q, k, p, v, row_max, row_scale, row_sum;
};

Tiles declare_tiles(KernelBuilder& k, const AttentionSchedule& s, const Geometry& g) {
    return {k.shared(DType::f32, int64_t{kDimStep} * g.q_ld, "q_tile"),
            k.shared(DType::f32, int64_t{kDimStep} * g.k_ld, "k_tile"),
            k.shared(DType::f32, int64_t{kKeyBlock} * g.p_ld, "p_tile"),
            k.shared(DType::f32, int64_t{kKeyStep} * g.v_ld, "v_tile"),
            k.shared(DType::f32, s.rows, "row_max"),
            k.shared(DType::f32, s.rows, "row_scale"),
            k.shared(DType::f32, s.rows, "row_sum")};
}

// Where a staged thread works (its block's rows: query_block).
struct Place {
    Var i0, q_at, kv_at;  // the block's first row; Q's and K's (and V's) first element
    Var t, ty, tx;        // the thread, its rows (ty*tq ...) and its keys and dims (tx*tk, tx*td)
    Var end;              // keys any row of the block sees
    Var own_limit;        // keys the row this thread owns sees (threads t < rows own row i0 + t)
    std::vector<Var> row_limit;  // keys each of the thread's tq rows sees
};

Place place(KernelBuilder& k, const Params& p, const AttentionSchedule& s, const Geometry& g,
            int head_dim) {
    const int R = s.rows;
    const auto [bh, i0] = query_block(k, p, R);
    Var t = k.let(k.thread_index(), "t");
    Var ty = k.let(t / g.across, "ty");
    const std::optional<Expr> keys = batch_keys(k, p, bh);
    Place at{i0,
             k.let(bh * p.seq_q * head_dim, "q_at"),
             k.let(kv_row(p, bh) * p.seq_k * head_dim, "kv_at"),
             t,
             ty,
             k.let(t % g.across, "tx"),
             k.let(key_limit(p, keys, min(i0 + R, p.seq_q) - 1), "end"),
             k.let(key_limit(p, keys, i0 + t), "own_limit"),
             {}};
    for (int r = 0; r < s.tq; ++r)
        at.row_limit.push_back(k.let(key_limit(p, keys, i0 + ty * s.tq + r), "row_limit"));
    return at;
}

// What a staged thread carries from key block to key block: its owned row's m and l, and its
// tq x td accumulators (row-major).
struct Carried {
    Var m, l;
    std::vector<Var> acc;
};

Carried carried(KernelBuilder& k, int count) {
    Carried c{k.let(DType::f32, kMinusInf, "m"), k.let(DType::f32, 0.0f, "l"), {}};
    for (int i = 0; i < count; ++i) c.acc.push_back(k.let(DType::f32, 0.0f, "acc"));
    return c;
}

// The staged form, as a class: the pieces each step needs are its members.
class Staged {
  public:
    Staged(KernelBuilder& k, const Params& p, const AttentionTypes& t, const AttentionSchedule& s)
        : k_(k),
          p_(p),
          t_(t),
          s_(s),
          g_(geometry(s, t.head_dim)),
          D_(t.head_dim),
          tiles_(declare_tiles(k, s, g_)),
          at_(place(k, p, s, g_, t.head_dim)),
          c_(carried(k, s.tq * g_.td)) {}

    void build() {
        k_.for_(
            0, at_.end, [&](Expr t0) { key_block(t0); }, kKeyBlock);
        k_.if_(at_.t < s_.rows, [&] { tiles_.row_sum[at_.t] = c_.l; });
        k_.barrier();
        store_output();
    }

  private:
    // One key block from t0: scores, the row statistics, p_j, l and acc, in the op's order.
    void key_block(const Expr& t0) {
        const int R = s_.rows;
        const std::vector<Var> s = scores(t0);
        // The scores, j-major (the tq rows of a key adjacent).
        for (int c = 0; c < s_.tk; ++c) {
            const Expr at = (at_.tx * s_.tk + c) * g_.p_ld + at_.ty * s_.tq;
            store_rows(at, [&](int r) { return s[static_cast<size_t>(r * s_.tk + c)].expr(); });
        }
        k_.barrier();
        Var own_keys = k_.let(min(max(at_.own_limit - t0, 0), kKeyBlock), "own_keys");
        Var own_scale = k_.let(DType::f32, 1.0f, "own_scale");
        k_.if_(at_.t < R, [&] {
            Var m_new = k_.let(c_.m.expr(), "m_new");
            k_.for_(0, own_keys,
                    [&](Expr j) { m_new = max(m_new, tiles_.p[j * g_.p_ld + at_.t]); });
            // A block with none of the row's keys is skipped: c = 1 leaves l and acc as they are.
            own_scale = select(own_keys == 0, 1.0f, rescale(c_.m, m_new));
            tiles_.row_max[at_.t] = m_new;
            tiles_.row_scale[at_.t] = own_scale;
            c_.m = m_new;
        });
        k_.barrier();
        // p_j = w(s_j - m_new) in place, every thread a share of the tile (the p_j of masked
        // keys are computed too and never read).
        k_.for_(
            at_.t, kKeyBlock * R,
            [&](Expr e) {
                Var row = k_.let(e % R, "p_row");
                Var at = k_.let(e / R * g_.p_ld + row, "p_at");
                tiles_.p[at] = weight(tiles_.p[at] - tiles_.row_max[row]);
            },
            s_.threads());
        k_.barrier();
        // l = l * c, then + p_j in key order (the row owners; p_tile is only read until the next
        // block's barriers).
        k_.if_(at_.t < R, [&] {
            c_.l = c_.l * own_scale;
            k_.for_(0, own_keys, [&](Expr j) { c_.l = c_.l + tiles_.p[j * g_.p_ld + at_.t]; });
        });
        for (int r = 0; r < s_.tq; ++r) {
            Var c = k_.let(tiles_.row_scale[at_.ty * s_.tq + r], "row_c");
            for (int d = 0; d < g_.td; ++d) {
                Var& a = c_.acc[static_cast<size_t>(r * g_.td + d)];
                a = a * c;
            }
        }
        values(t0);
    }

    // This thread's tq x tk scores of the key block at t0: each dot product an fma chain over d
    // in order (Q and K staged kDimStep dims at a time), then times scale.
    std::vector<Var> scores(const Expr& t0) {
        const int R = s_.rows, T = s_.threads();
        const bool ragged = D_ % kDimStep != 0;  // the last step has fewer dims
        std::vector<Var> s;
        for (int i = 0; i < s_.tq * s_.tk; ++i) s.push_back(k_.let(DType::f32, 0.0f, "score"));
        k_.for_(
            0, D_,
            [&](Expr d0) {
                // A step's dims past D (ragged) are read clamped and never used.
                auto dim = [&](const Expr& dd) { return ragged ? min(d0 + dd, D_ - 1) : d0 + dd; };
                each_slot(k_, R * kDimStep, T, [&](Expr e) {
                    Var r = k_.let(e / kDimStep, "r");
                    Var dd = k_.let(e % kDimStep, "dd");
                    Expr row = min(at_.i0 + r, p_.seq_q - 1);
                    tiles_.q[dd * g_.q_ld + r] = to_f32(p_.q(at_.q_at + row * D_ + dim(dd)));
                });
                each_slot(k_, kKeyBlock * kDimStep, T, [&](Expr e) {
                    Var j = k_.let(e / kDimStep, "j");
                    Var dd = k_.let(e % kDimStep, "dd");
                    Expr key = min(t0 + j, p_.seq_k - 1);
                    tiles_.k[dd * g_.k_ld + j] = to_f32(p_.k(at_.kv_at + key * D_ + dim(dd)));
                });
                k_.barrier();
                const Expr dims = ragged ? min(D_ - d0, kDimStep) : Expr(kDimStep);
                k_.for_(0, dims, [&](Expr dd) {
                    const std::vector<Expr> a =
                        read_run(k_, tiles_.q, dd * g_.q_ld + at_.ty * s_.tq, s_.tq, "q");
                    const std::vector<Expr> b =
                        read_run(k_, tiles_.k, dd * g_.k_ld + at_.tx * s_.tk, s_.tk, "k");
                    for (int r = 0; r < s_.tq; ++r)
                        for (int c = 0; c < s_.tk; ++c) {
                            Var& v = s[static_cast<size_t>(r * s_.tk + c)];
                            v = fma(a[static_cast<size_t>(r)], b[static_cast<size_t>(c)], v);
                        }
                });
                k_.barrier();  // the step's tiles are read before the next step writes them
            },
            kDimStep);
        for (Var& v : s) v = v * p_.scale;
        return s;
    }

    // acc = fma(p_j, v[j], acc) for the block's keys in order, V staged kKeyStep keys at a time
    // (up to the last key any row of the block sees); a row's keys past its own limit are skipped.
    void values(const Expr& t0) {
        const int T = s_.threads();
        std::vector<Var> row_keys;
        for (const Var& limit : at_.row_limit)
            row_keys.push_back(k_.let(min(max(limit - t0, 0), kKeyBlock), "row_keys"));
        k_.for_(
            0, min(at_.end - t0, kKeyBlock),
            [&](Expr j0) {
                each_slot(k_, kKeyStep * g_.width, T, [&](Expr e) {
                    Var jj = k_.let(e / g_.width, "jj");
                    Var d = k_.let(e % g_.width, "d");
                    Expr key = min(t0 + j0 + jj, p_.seq_k - 1);
                    Expr dim = g_.width > D_ ? min(d, Expr(D_ - 1)) : d.expr();
                    tiles_.v[jj * g_.v_ld + d] = to_f32(p_.v(at_.kv_at + key * D_ + dim));
                });
                k_.barrier();
                k_.for_(0, kKeyStep, [&](Expr jj) {
                    Var j = k_.let(j0 + jj, "j");
                    const std::vector<Expr> pr =
                        read_run(k_, tiles_.p, j * g_.p_ld + at_.ty * s_.tq, s_.tq, "p");
                    const std::vector<Expr> vc =
                        read_run(k_, tiles_.v, jj * g_.v_ld + at_.tx * g_.td, g_.td, "v");
                    for (int r = 0; r < s_.tq; ++r)
                        k_.if_(j < row_keys[static_cast<size_t>(r)], [&] {
                            for (int d = 0; d < g_.td; ++d) {
                                Var& a = c_.acc[static_cast<size_t>(r * g_.td + d)];
                                a = fma(pr[static_cast<size_t>(r)], vc[static_cast<size_t>(d)], a);
                            }
                        });
                });
                k_.barrier();  // the tile is read before the next step writes it
            },
            kKeyStep);
    }

    // Stores value(r) for r < tq at p_tile[at + r] (one vector store where tq allows).
    void store_rows(const Expr& at, const std::function<Expr(int)>& value) {
        if (s_.tq == 2 || s_.tq == 4) {
            std::vector<Expr> values;
            for (int r = 0; r < s_.tq; ++r) values.push_back(value(r));
            k_.store_vector(tiles_.p, at, values);
            return;
        }
        for (int r = 0; r < s_.tq; ++r) tiles_.p[at + r] = value(r);
    }

    void store_output() {
        for (int r = 0; r < s_.tq; ++r) {
            Var row = k_.let(at_.i0 + at_.ty * s_.tq + r, "row");
            Var sum = k_.let(tiles_.row_sum[at_.ty * s_.tq + r], "sum");
            for (int d = 0; d < g_.td; ++d) {
                Var dim = k_.let(at_.tx * g_.td + d, "dim");
                const Expr v = c_.acc[static_cast<size_t>(r * g_.td + d)] / sum;
                k_.if_(row < p_.seq_q && dim < D_, [&] { p_.store(at_.q_at + row * D_ + dim, v); });
            }
        }
    }

    KernelBuilder& k_;
    const Params& p_;
    const AttentionTypes& t_;
    const AttentionSchedule& s_;
    const Geometry g_;
    const int D_;
    const Tiles tiles_;
    const Place at_;
    Carried c_;
};

}  // namespace

Geometry geometry(const AttentionSchedule& s, int head_dim) {
    Geometry g{};
    g.across = kKeyBlock / s.tk;
    g.td = static_cast<int>(ceil_div(head_dim, g.across));
    g.width = g.across * g.td;
    g.q_ld = s.rows + kTilePad;
    g.k_ld = kKeyBlock + kTilePad;
    g.p_ld = s.rows + kTilePad;
    g.v_ld = g.width + kTilePad;
    g.shared_bytes = 4 * (int64_t{kDimStep} * g.q_ld + int64_t{kDimStep} * g.k_ld +
                          int64_t{kKeyBlock} * g.p_ld + int64_t{kKeyStep} * g.v_ld + 3 * s.rows);
    return g;
}

void staged_form(KernelBuilder& k, const Params& p, const AttentionTypes& t,
                 const AttentionSchedule& s) {
    Staged(k, p, t, s).build();
}

}  // namespace kiln::ops::attention_detail
