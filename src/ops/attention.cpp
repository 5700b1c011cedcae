// attention in the DSL: one kernel source, monomorphized per dtypes, head_dim and schedule.
#include "ops/attention.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "kiln/dsl.hpp"
#include "kiln/math.hpp"
#include "ops/ceil_div.hpp"
#include "ops/checked_mul.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops {
namespace {

constexpr int kKeyBlock = kAttentionKeyBlock;
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
// The longest sequence: a block's rows or keys past its end (at most 1024) stay in 32 bits.
constexpr int64_t kMaxSeq = kMaxIndex - 1024;
// Staged form: dims of Q and K per shared tile, keys of V per shared tile.
constexpr int kDimStep = 16;
constexpr int kKeyStep = 16;
// Elements each row of a shared tile is padded by (a multiple of 4: runs stay 16-byte aligned).
constexpr int kTilePad = 4;
// Static shared memory a block may use on every backend (CUDA's limit without opting in).
constexpr int64_t kMaxSharedBytes = 48 * 1024;
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

bool pow2(int v) {
    return v >= 1 && std::has_single_bit(static_cast<unsigned>(v));
}

// The staged form's geometry for a head_dim: threads along the keys of the score tile (and the
// dims of the acc tile), dims of acc per thread, the dims the acc tiles span (>= D) and the
// shared tiles' row lengths.
struct Geometry {
    int across, td, width;
    int q_ld, k_ld, p_ld, v_ld;
    int64_t shared_bytes;
};

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

void check_schedule(const AttentionSchedule& s) {
    if (!pow2(s.rows) || s.rows > 1024)
        fail("attention schedule {}: {} rows a block; expected a power of two up to 1024", s.name,
             s.rows);
    if (!s.staged) {
        if (s.tq != 1 || s.tk != 1)
            fail("attention schedule {}: direct with a {}x{} score tile; expected 1x1", s.name,
                 s.tq, s.tk);
        return;
    }
    if (!pow2(s.tq) || !pow2(s.tk) || s.tq > 8 || s.tk > 8)
        fail("attention schedule {}: score tile {}x{}; expected powers of two from 1 to 8", s.name,
             s.tq, s.tk);
    if (s.rows < 4 || s.rows % s.tq != 0)
        fail("attention schedule {}: {} rows a block; expected at least 4, a multiple of tq {}",
             s.name, s.rows, s.tq);
    if (s.threads() > 1024 || s.threads() < s.rows)
        fail(
            "attention schedule {}: {} threads a block; expected {} to 1024 (one per row at least)",
            s.name, s.threads(), s.rows);
}

void check_types(const AttentionTypes& t) {
    if (!is_input_float(t.input))
        fail("attention: inputs are {}; expected f32, f16 or bf16", name(t.input));
    if (t.output != DType::f32 && t.output != t.input)
        fail("attention: output dtype {} for {} inputs; expected f32{}", name(t.output),
             name(t.input), t.input == DType::f32 ? "" : fmt::format(" or {}", name(t.input)));
    if (t.head_dim < 1 || t.head_dim > kAttentionMaxHeadDim)
        fail("attention: head_dim {}; expected 1 to {}", t.head_dim, kAttentionMaxHeadDim);
}

// The kernel's parameters, in launch order.
struct Params {
    Memory q, k, v, o;
    Expr batch, heads, kv_heads, seq_q, seq_k, causal, scale;
};

Params declare_params(KernelBuilder& k, const AttentionTypes& t) {
    Memory q = k.input("q", t.input);
    Memory kk = k.input("k", t.input);
    Memory v = k.input("v", t.input);
    Memory o = k.output("o", t.output);
    auto i32 = [&](const char* n) { return k.scalar(n, DType::i32); };
    Expr batch = i32("batch"), heads = i32("heads"), kv_heads = i32("kv_heads");
    Expr seq_q = i32("seq_q"), seq_k = i32("seq_k"), causal = i32("causal");
    Expr scale = k.scalar("scale", DType::f32);
    return {q, kk, v, o, batch, heads, kv_heads, seq_q, seq_k, causal, scale};
}

// Whether a buffer's length is exactly the product of the factors (each >= 1), in i64 without
// overflow: each partial product is compared with the length before the next factor.
Expr holds_exactly(const Memory& m, const std::vector<Expr>& factors) {
    const Expr len = cast(DType::i64, m.len());
    Expr product = cast(DType::i64, factors[0]);
    Expr ok = product <= len;
    for (size_t i = 1; i < factors.size(); ++i) {
        product = product * cast(DType::i64, factors[i]);
        ok = ok && product <= len;
    }
    return ok && product == len;
}

void require_contract(KernelBuilder& k, const Params& p, int head_dim) {
    k.require(p.batch >= 1 && p.heads >= 1 && p.kv_heads >= 1 && p.seq_q >= 1 && p.seq_k >= 1,
              "batch, heads, kv_heads, seq_q and seq_k are >= 1");
    k.require(p.seq_q <= static_cast<int32_t>(kMaxSeq) && p.seq_k <= static_cast<int32_t>(kMaxSeq),
              fmt::format("seq_q and seq_k are at most {}", kMaxSeq));
    k.require(p.heads % p.kv_heads == 0, "kv_heads divides heads");
    k.require(p.causal == 0 || p.causal == 1, "causal is 0 or 1");
    k.require(p.causal == 0 || p.seq_q <= p.seq_k, "a causal launch has seq_q <= seq_k");
    const Expr d = head_dim;
    k.require(holds_exactly(p.q, {p.batch, p.heads, p.seq_q, d}),
              "q holds batch x heads x seq_q x head_dim elements");
    k.require(holds_exactly(p.k, {p.batch, p.kv_heads, p.seq_k, d}),
              "k holds batch x kv_heads x seq_k x head_dim elements");
    k.require(holds_exactly(p.v, {p.batch, p.kv_heads, p.seq_k, d}),
              "v holds batch x kv_heads x seq_k x head_dim elements");
    k.require(holds_exactly(p.o, {p.batch, p.heads, p.seq_q, d}),
              "o holds batch x heads x seq_q x head_dim elements");
}

// Keys query row i sees (the op's limit), at most seq_k also for rows past seq_q (a staged
// block's tail rows, computed but never stored).
Expr key_limit(const Params& p, const Expr& i) {
    return select(p.causal != 0, min(p.seq_k - p.seq_q + i + 1, p.seq_k), p.seq_k);
}

// The K and V row of (batch, head) `bh`: batch bh / heads, kv head (bh % heads) / group.
Expr kv_row(const Params& p, const Expr& bh) {
    return bh / p.heads * p.kv_heads + bh % p.heads / (p.heads / p.kv_heads);
}

// The op's c: the factor by which l and acc shrink when the running max moves from m to m_new.
Expr rescale(const Expr& m, const Expr& m_new) {
    return select(m == kMinusInf, 0.0f, exp(m - m_new));
}

Expr to_output(const AttentionTypes& t, const Expr& v) {
    return t.output == DType::f32 ? v : cast(t.output, v);
}

// The direct form: one thread per query row, the op's loops as written.
void direct_form(KernelBuilder& k, const Params& p, const AttentionTypes& t) {
    const int D = t.head_dim;
    Var row = k.let(k.absolute_pos(), "row");
    Var rows = k.let(p.batch * p.heads * p.seq_q, "rows");  // <= q's length: fits i32
    k.if_(row < rows, [&] {
        Var i = k.let(row % p.seq_q, "i");
        Var q_at = k.let(row * D, "q_at");
        Var kv_at = k.let(kv_row(p, row / p.seq_q) * p.seq_k * D, "kv_at");
        Var limit = k.let(key_limit(p, i), "limit");
        std::vector<Var> q, acc;
        for (int d = 0; d < D; ++d) q.push_back(k.let(to_f32(p.q[q_at + d]), "q"));
        for (int d = 0; d < D; ++d) acc.push_back(k.let(DType::f32, 0.0f, "acc"));
        Var m = k.let(DType::f32, kMinusInf, "m");
        Var l = k.let(DType::f32, 0.0f, "l");
        Memory s = k.local_array(DType::f32, kKeyBlock, "s");
        k.for_(
            0, limit,
            [&](Expr t0) {
                Var n = k.let(min(limit - t0, kKeyBlock), "n");
                Var m_new = k.let(m.expr(), "m_new");
                k.for_(0, n, [&](Expr j) {
                    Var key = k.let(kv_at + (t0 + j) * D, "key");
                    Var dot = k.let(DType::f32, 0.0f, "dot");
                    for (int d = 0; d < D; ++d) dot = fma(q[d], to_f32(p.k[key + d]), dot);
                    Var sj = k.let(dot * p.scale, "s_j");
                    s[j] = sj;
                    m_new = max(m_new, sj);
                });
                Var c = k.let(rescale(m, m_new), "c");
                l = l * c;
                for (Var& a : acc) a = a * c;
                k.for_(0, n, [&](Expr j) {
                    Var pj = k.let(exp(s[j] - m_new), "p_j");
                    l = l + pj;
                    Var value = k.let(kv_at + (t0 + j) * D, "value");
                    for (int d = 0; d < D; ++d) acc[d] = fma(pj, to_f32(p.v[value + d]), acc[d]);
                });
                m = m_new;
            },
            kKeyBlock);
        for (int d = 0; d < D; ++d) p.o[q_at + d] = to_output(t, acc[d] / l);
    });
}

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

// Where a staged thread works. Block x takes (batch, head) x / blocks_q and its query block
// counted from the last, so the blocks with the most keys (causal) start first.
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
    Var blocks_q = k.let((p.seq_q + (R - 1)) / R, "blocks_q");
    Var block = k.let(k.block_index(), "block");
    Var bh = k.let(block / blocks_q, "bh");
    Var i0 = k.let((blocks_q - 1 - block % blocks_q) * R, "i0");
    Var t = k.let(k.thread_index(), "t");
    Var ty = k.let(t / g.across, "ty");
    Place at{i0,
             k.let(bh * p.seq_q * head_dim, "q_at"),
             k.let(kv_row(p, bh) * p.seq_k * head_dim, "kv_at"),
             t,
             ty,
             k.let(t % g.across, "tx"),
             k.let(key_limit(p, min(i0 + R, p.seq_q) - 1), "end"),
             k.let(key_limit(p, i0 + t), "own_limit"),
             {}};
    for (int r = 0; r < s.tq; ++r)
        at.row_limit.push_back(k.let(key_limit(p, i0 + ty * s.tq + r), "row_limit"));
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

// The staged form (see AttentionSchedule): a block takes `rows` query rows of one (batch, head).
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
        // p_j = exp(s_j - m_new) in place, every thread a share of the tile (the p_j of masked
        // keys are computed too and never read).
        k_.for_(
            at_.t, kKeyBlock * R,
            [&](Expr e) {
                Var row = k_.let(e % R, "p_row");
                Var at = k_.let(e / R * g_.p_ld + row, "p_at");
                tiles_.p[at] = exp(tiles_.p[at] - tiles_.row_max[row]);
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
                    tiles_.q[dd * g_.q_ld + r] = to_f32(p_.q[at_.q_at + row * D_ + dim(dd)]);
                });
                each_slot(k_, kKeyBlock * kDimStep, T, [&](Expr e) {
                    Var j = k_.let(e / kDimStep, "j");
                    Var dd = k_.let(e % kDimStep, "dd");
                    Expr key = min(t0 + j, p_.seq_k - 1);
                    tiles_.k[dd * g_.k_ld + j] = to_f32(p_.k[at_.kv_at + key * D_ + dim(dd)]);
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
                    tiles_.v[jj * g_.v_ld + d] = to_f32(p_.v[at_.kv_at + key * D_ + dim]);
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
                k_.if_(row < p_.seq_q && dim < D_,
                       [&] { p_.o[at_.q_at + row * D_ + dim] = to_output(t_, v); });
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

// The memo key of a kernel: every comptime value it is built from.
std::string kernel_key(const AttentionTypes& t, const AttentionSchedule& s) {
    return fmt::format("attention/{}/{}/d{}/{}/r{}q{}k{}s{}", name(t.input), name(t.output),
                       t.head_dim, s.name, s.rows, s.tq, s.tk, s.staged);
}

std::function<ir::Kernel()> builder(const AttentionTypes& t, const AttentionSchedule& s) {
    return [t, s] { return attention_kernel(t, s); };
}

AttentionShape resolved(const AttentionShape& s) {
    AttentionShape r = s;
    if (r.kv_heads == 0) r.kv_heads = r.heads;
    return r;
}

std::string shape_text(const AttentionShape& s) {
    return fmt::format("batch={} heads={} kv_heads={} seq_q={} seq_k={} head_dim={}", s.batch,
                       s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim);
}

// The element count batch x heads x seq x head_dim of a buffer, checked: kiln::Error naming the
// buffer when it is not `count` or passes 32-bit indices.
void check_count(const char* what, const char* heads_name, int64_t batch, int64_t heads,
                 int64_t seq, int64_t head_dim, size_t count) {
    const char* seq_name = what[0] == 'k' || what[0] == 'v' ? "seq_k" : "seq_q";
    const std::string dims = fmt::format("batch x {} x {} x head_dim = {} x {} x {} x {}",
                                         heads_name, seq_name, batch, heads, seq, head_dim);
    std::optional<int64_t> n = checked_mul(batch, heads);
    if (n) n = checked_mul(*n, seq);
    if (n) n = checked_mul(*n, head_dim);
    if (!n || *n > kMaxIndex)
        fail("attention: {} is {}, past {} elements; expected at most {} (32-bit indices)", what,
             dims, kMaxIndex, kMaxIndex);
    if (static_cast<int64_t>(count) != *n)
        fail("attention: {} has {} elements; expected {} = {}", what, count, dims, *n);
}

AttentionTypes types_of(const Buffer& q, const AttentionShape& s, const AttentionOptions& o) {
    return {q.dtype(), o.out, static_cast<int>(s.head_dim)};
}

Tuned<Buffer> make_tuned(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                         const AttentionShape& shape, const AttentionOptions& options) {
    const AttentionShape s = resolved(shape);
    const AttentionTypes t = types_of(q, s, options);
    Tuned<Buffer> tuned(
        "attention",
        fmt::format("batch={},heads={},kv_heads={},seq_q={},seq_k={},d={},in={},out={},causal={}",
                    s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim, name(t.input),
                    name(t.output), options.causal ? 1 : 0),
        device);
    const VariantTable& table = memo_variant_table(
        fmt::format("attention/{}/{}/d{}", name(t.input), name(t.output), t.head_dim),
        device.info().backend, "attention", [&] {
            std::vector<NamedKernel> kernels;
            for (const auto& sc : attention_variants())
                kernels.push_back({sc.name, kernel_key(t, sc), builder(t, sc)});
            return kernels;
        });
    tuned.variants(table, [&device, &q, &k, &v, s, options](size_t i) -> Tuned<Buffer>::Closure {
        return [&device, &q, &k, &v, s, options, sc = &attention_variants()[i]](int iters) {
            return attention_bench(device, q, k, v, s, options, *sc, iters);
        };
    });
    return tuned;
}

}  // namespace

float attention_scale(const AttentionShape& shape, const AttentionOptions& options) {
    if (options.scale) return *options.scale;
    return 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
}

const std::vector<AttentionSchedule>& attention_variants() {
    // Each point's name spells its knobs, so the two cannot drift apart.
    auto direct = [](int rows) {
        return AttentionSchedule{fmt::format("d{}", rows), false, rows, 1, 1};
    };
    auto staged = [](int rows, int tq, int tk) {
        return AttentionSchedule{fmt::format("s{}_t{}x{}", rows, tq, tk), true, rows, tq, tk};
    };
    static const std::vector<AttentionSchedule> variants = {
        direct(64), staged(16, 1, 4), staged(32, 2, 4), staged(64, 4, 4), staged(64, 4, 8),
    };
    return variants;
}

const AttentionSchedule& attention_variant(const std::string& n) {
    for (const auto& s : attention_variants())
        if (s.name == n) return s;
    fail("attention: no schedule named '{}'", n);
}

ir::Kernel attention_kernel(const AttentionTypes& t, const AttentionSchedule& s) {
    check_types(t);
    check_schedule(s);
    if (s.staged && geometry(s, t.head_dim).shared_bytes > kMaxSharedBytes)
        fail(
            "attention schedule {}: head_dim {} needs {} bytes of shared memory; expected at most "
            "{}",
            s.name, t.head_dim, geometry(s, t.head_dim).shared_bytes, kMaxSharedBytes);
    KernelBuilder k(
        fmt::format("attention_{}_{}_d{}_{}", name(t.input), name(t.output), t.head_dim, s.name),
        s.threads());
    const Params p = declare_params(k, t);
    require_contract(k, p, t.head_dim);
    if (s.staged)
        Staged(k, p, t, s).build();
    else
        direct_form(k, p, t);
    return k.finish();
}

int64_t attention_grid(const AttentionShape& shape, const AttentionSchedule& s) {
    const AttentionShape r = resolved(shape);
    if (s.staged) return r.batch * r.heads * ceil_div(r.seq_q, s.rows);
    return ceil_div(r.batch * r.heads * r.seq_q, s.rows);
}

std::vector<Arg> attention_scalars(const AttentionShape& shape, const AttentionOptions& options) {
    const AttentionShape r = resolved(shape);
    auto i32 = [](int64_t v) { return Arg(static_cast<int32_t>(v)); };
    return {i32(r.batch),
            i32(r.heads),
            i32(r.kv_heads),
            i32(r.seq_q),
            i32(r.seq_k),
            i32(options.causal ? 1 : 0),
            Arg(attention_scale(r, options))};
}

void attention_check(const Buffer& q, const Buffer& k, const Buffer& v, const AttentionShape& shape,
                     const AttentionOptions& options) {
    const AttentionShape s = resolved(shape);
    if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.seq_q < 1 || s.seq_k < 1 ||
        s.head_dim < 1)
        fail("attention: shape {}; expected every size >= 1 (kv_heads 0: heads)", shape_text(s));
    if (s.head_dim > kAttentionMaxHeadDim)
        fail("attention: head_dim {}; expected at most {}", s.head_dim, kAttentionMaxHeadDim);
    if (s.seq_q > kMaxSeq || s.seq_k > kMaxSeq)
        fail("attention: seq_q {} and seq_k {}; expected each at most {}", s.seq_q, s.seq_k,
             kMaxSeq);
    if (s.heads % s.kv_heads != 0)
        fail(
            "attention: heads {} is not a multiple of kv_heads {}; expected kv_heads to divide "
            "heads",
            s.heads, s.kv_heads);
    if (options.causal && s.seq_q > s.seq_k)
        fail(
            "attention: causal with seq_q {} > seq_k {}: the first {} query rows would see no "
            "key; expected seq_q <= seq_k",
            s.seq_q, s.seq_k, s.seq_q - s.seq_k);
    if (!is_input_float(q.dtype()))
        fail("attention: q is {}; expected f32, f16 or bf16", name(q.dtype()));
    for (const Buffer* b : {&k, &v})
        if (b->dtype() != q.dtype())
            fail("attention: {} is {} but q is {}; expected the same dtype", b == &k ? "k" : "v",
                 name(b->dtype()), name(q.dtype()));
    check_types(types_of(q, s, options));
    if (options.scale && !std::isfinite(*options.scale))
        fail("attention: scale {}; expected a finite value", *options.scale);
    for (const Buffer* b : {&k, &v})
        if (&b->device() != &q.device())
            fail("attention: {} lives on {} but q on {}; expected one device", b == &k ? "k" : "v",
                 b->device().info().id, q.device().info().id);
    check_count("q", "heads", s.batch, s.heads, s.seq_q, s.head_dim, q.count());
    check_count("k", "kv_heads", s.batch, s.kv_heads, s.seq_k, s.head_dim, k.count());
    check_count("v", "kv_heads", s.batch, s.kv_heads, s.seq_k, s.head_dim, v.count());
}

Timed<Buffer> attention_bench(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                              const AttentionShape& shape, const AttentionOptions& options,
                              const AttentionSchedule& schedule, int iters) {
    attention_check(q, k, v, shape, options);
    check_schedule(schedule);
    if (&q.device() != &device)
        fail("attention: q lives on {}; expected {}", q.device().info().id, device.info().id);
    const AttentionShape s = resolved(shape);
    const AttentionTypes t = types_of(q, s, options);
    auto compiled = memo_compiled(device, kernel_key(t, schedule), builder(t, schedule));
    Buffer o(device, options.out, q.count());
    std::vector<Arg> args{q, k, v, o};
    for (const Arg& a : attention_scalars(s, options)) args.push_back(a);
    const int64_t grid = attention_grid(s, schedule);
    const double ms = time_dispatches(device, iters, [&] { compiled->launch(grid, args); });
    return {std::move(o), ms};
}

Tuned<Buffer> attention_tuned(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                              const AttentionShape& shape, const AttentionOptions& options) {
    attention_check(q, k, v, shape, options);
    return make_tuned(device, q, k, v, shape, options);
}

Buffer attention(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                 const AttentionShape& shape, const AttentionOptions& options, Tuner& tuner) {
    attention_check(q, k, v, shape, options);
    if (&q.device() != &device)
        fail("attention: q lives on {}; expected {}", q.device().info().id, device.info().id);
    return make_tuned(device, q, k, v, shape, options).run(tuner);
}

}  // namespace kiln::ops
