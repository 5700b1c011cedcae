// attention's tensor-core form (attention_parts.hpp; the class is stated in attention.hpp): each
// warp takes 16 query rows; per key block of kAttentionKeyBlock keys, S = Q·Kᵀ and O += P·V are
// mma.m16n8k16 chains whose K and V fragments are read by ldmatrix (V's k-major rows by
// ldmatrix.trans), the softmax statistics stay in the accumulators' registers, and P goes from
// its accumulators to the next mma's operand without shared memory. K and V are copied into
// their shared tiles asynchronously where they are buffers: with one stage V's block while S is
// summed and the next block's K while P·V is; with S stages both S - 1 blocks ahead.
#include <vector>

#include "base/ceil_div.hpp"
#include "kiln/math.hpp"
#include "ops/attention/attention_parts.hpp"
#include "ops/tensor_core_parts.hpp"

namespace kiln::ops::attention_detail {
namespace {

using namespace tensor_core;

// u32 words each line of a pair tile is padded by: a fragment read (8 lines x 4 consecutive
// words) then touches each of the 32 banks once.
constexpr int kPairPad = 4;
constexpr float kLog2e = 0x1.715476p+0f;

// head_dim rounded up to whole mma steps (16 dims); the dims past head_dim read as zeros.
int padded_dims(int head_dim) {
    return static_cast<int>(ceil_div(head_dim, 16)) * 16;
}

// Where a lane works: warp w takes its block's rows (query_block) i0 + 16w ..., the lane rows g
// and g + 8 of those (g = lane / 4, tq = lane % 4: mma's fragment layout).
struct Place {
    Var g, tq;
    Var r8, j1, j2;   // the row a lane gives ldmatrix: lane % 8, of matrix lane / 8 = j1 + 2 j2
    Var q_at, kv_at;  // the first elements of the (batch, head)'s Q rows and of its K and V rows
    Var end;          // keys any row of the block sees
    Var shared_keys;  // keys every row of the block sees (its first row's)
    Var slot;         // the lane's word of its warp's row parts (row g's; row g + 8's 32 on)
    std::vector<Var> row, limit;  // the lane's two rows and the keys each sees
};

Place place(KernelBuilder& k, const Params& p, const AttentionSchedule& s, int D) {
    const int R = s.rows;
    const auto [bh, i0] = query_block(k, p, R);
    Var t = k.let(k.thread_index(), "t");
    Var warp = k.let(t / kWarp, "warp");
    Var lane = k.let(t % kWarp, "lane");
    Var g = k.let(lane / 4, "g");
    Var tq = k.let(lane % 4, "tq");
    const std::optional<Expr> keys = batch_keys(k, p, bh);
    Place at{g,
             tq,
             k.let(lane % 8, "r8"),
             k.let(lane / 8 % 2, "j1"),
             k.let(lane / 16, "j2"),
             k.let(bh * p.seq_q * D, "q_at"),
             k.let(kv_row(p, bh) * p.seq_k * D, "kv_at"),
             k.let(key_limit(p, keys, min(i0 + R, p.seq_q) - 1), "end"),
             k.let(key_limit(p, keys, min(i0, p.seq_q - 1)), "shared_keys"),
             k.let((warp * 16 + g) * 4 + tq, "slot"),
             {},
             {}};
    for (int r = 0; r < 2; ++r) {
        at.row.push_back(k.let(i0 + warp * 16 + g + 8 * r, "row"));
        at.limit.push_back(k.let(key_limit(p, keys, min(at.row.back(), p.seq_q - 1)), "limit"));
    }
    return at;
}

class TensorCore {
  public:
    TensorCore(KernelBuilder& k, const Params& p, const AttentionTypes& t,
               const AttentionSchedule& s)
        : k_(k),
          p_(p),
          t_(t),
          s_(s),
          D_(t.head_dim),
          Dp_(padded_dims(t.head_dim)),
          k_ld_(Dp_ / 2 + kPairPad),
          v_ld_(k_major_ld(Dp_)),
          k_size_(kKeyBlock * k_ld_),
          v_size_(kKeyBlock * v_ld_),
          at_(place(k, p, s, t.head_dim)),
          scale2_(k.let(p.scale * kLog2e, "scale2")) {}

    void build() {
        const int S = s_.stages;
        // A key block's K rows (keys, pairs along the dims) and V rows (keys, k-major: dims two
        // to a word), a tile of each per stage. Key j of the block from t0 is K's row
        // min(t0 + j, seq_k - 1) (keys past seq_k are masked); V's rows past seq_k read as zeros.
        Memory k_tile = k_.shared(DType::u32, int64_t{k_size_} * S, "k_pairs");
        Memory v_tile = k_.shared(DType::u32, int64_t{v_size_} * S, "v_rows");
        Memory exchange = k_.shared(DType::f32, int64_t{s_.rows} * 4, "row_parts");
        Staging keys = stage_operand(k_, {p_.k, kKeyBlock, Dp_ / 2, k_ld_, true, s_.threads(),
                                          [](const Expr& l) { return l; }});
        const bool keys_copied = keys.width == 4 && D_ == Dp_;
        const KMajorStaging values = stage_k_major(k_, p_.v, Dp_, kKeyBlock, s_.threads());
        auto issue_keys = [&](const Expr& t0, const Expr& stage) {
            auto element = [&](const Expr& j, const Expr& d) {
                return at_.kv_at + min(t0 + j, p_.seq_k - 1) * D_ + d;
            };
            if (keys_copied) return keys.copy(k_, 0, k_tile, stage * k_size_, element);
            keys.fetch(k_, 0, D_, D_ == Dp_, element);
            keys.put(k_, k_tile, stage * k_size_);
        };
        auto issue_values = [&](const Expr& t0, const Expr& stage) {
            values.issue(
                k_, t0, p_.seq_k, false, 0, D_,
                [&](const Expr& d, const Expr& key) { return at_.kv_at + key * D_ + d; }, v_tile,
                stage * v_size_);
        };
        load_q();
        for (int r = 0; r < 2; ++r) {
            m_.push_back(k_.let(DType::f32, kMinusInf, "m"));
            l_.push_back(k_.let(DType::f32, 0.0f, "l"));
        }
        for (int i = 0; i < Dp_ / 8 * 4; ++i) o_.push_back(k_.let(DType::f32, 0.0f, "o"));
        // The block from t0 in stage `stage`: its scores (a block every row sees whole needs no
        // mask), then P·V (after `between`).
        auto sum_block = [&](const Expr& t0, const Expr& stage,
                             const std::function<void()>& between) {
            std::vector<Var> s;
            for (int i = 0; i < kKeyBlock / 8 * 4; ++i) s.push_back(k_.let(DType::f32, 0.0f, "s"));
            Var k_at = k_.let(stage * k_size_, "k_at");
            k_.if_(
                t0 + kKeyBlock <= at_.shared_keys,
                [&] { scores(t0, k_tile, k_at, exchange, s, false); },
                [&] { scores(t0, k_tile, k_at, exchange, s, true); });
            between();
            add_values(s, v_tile, stage * v_size_);
        };
        // Each barrier closes the copies issued since the one before as a group.
        if (S == 1) {
            // One tile each: V's block lands while S is summed, the next K while P·V is.
            const Expr only = constant(DType::i32, 0);
            issue_keys(0, only);
            k_.barrier(1);
            k_.for_(
                0, at_.end,
                [&](Expr t0) {
                    issue_values(t0, only);
                    k_.barrier(1);  // this block's K has landed
                    sum_block(t0, only, [&] {
                        k_.barrier(1);  // V has landed, and every warp has read K's tile
                        k_.if_(t0 + kKeyBlock < at_.end, [&] { issue_keys(t0 + kKeyBlock, only); });
                    });
                    k_.barrier(1);  // V's tile is read before the next block's copy
                },
                kKeyBlock);
        } else {
            // Block i in stage i % S, its K and V copied S - 1 blocks ahead.
            staged_steps(
                k_, S, at_.end, kKeyBlock,
                [&](const Expr& t0, const Expr& stage) {
                    issue_keys(t0, stage);
                    issue_values(t0, stage);
                },
                [&](const Expr& t0, const Expr& stage) { sum_block(t0, stage, [] {}); });
        }
        // l: the quad's four partial sums, added in lane order.
        std::vector<Var> l =
            quad_combine(exchange, l_, [](const Expr& a, const Expr& b) { return a + b; });
        for (int dn = 0; dn < Dp_ / 8; ++dn)
            for (int i = 0; i < 4; ++i) {
                const int r = i / 2;
                Var d = k_.let(dn * 8 + at_.tq * 2 + (i & 1), "d");
                k_.if_(at_.row[r] < p_.seq_q && d < D_, [&] {
                    p_.store(at_.q_at + at_.row[r] * D_ + d, o_[size_t(dn * 4 + i)] / l[size_t(r)]);
                });
            }
    }

  private:
    // The lane's Q fragments for every 16 dims, in registers for the whole launch (rows past
    // seq_q read row seq_q - 1's values, never stored).
    void load_q() {
        const bool whole = D_ == Dp_;
        for (int c = 0; c < Dp_ / 16; ++c)
            for (int half : {0, 8})
                for (int r = 0; r < 2; ++r) {
                    Var at = k_.let(at_.q_at + min(at_.row[size_t(r)], p_.seq_q - 1) * D_, "q_row");
                    q_.push_back(k_.let(pair_at(p_.q, c * 16 + half + at_.tq * 2, D_, whole,
                                                [&](const Expr& d) { return at + d; }),
                                        "q"));
                }
    }

    // The four lanes of a quad hold parts of the same two rows: each row's parts combined in
    // lane order through `exchange` (the warp's own slots).
    std::vector<Var> quad_combine(const Memory& exchange, const std::vector<Var>& parts,
                                  const std::function<Expr(const Expr&, const Expr&)>& combine) {
        for (int r = 0; r < 2; ++r) exchange[at_.slot + r * 32] = parts[size_t(r)];
        k_.warp_barrier();
        std::vector<Var> whole;
        for (int r = 0; r < 2; ++r) {
            Var first = k_.let(at_.slot - at_.tq + r * 32, "quad");
            Expr v = exchange[first];
            for (int q = 1; q < 4; ++q) v = combine(v, exchange[first + q]);
            whole.push_back(k_.let(v, "row_whole"));
        }
        k_.warp_barrier();  // read before the next exchange writes
        return whole;
    }

    // The scores of the key block from t0 into s, turned into P (`masking`: some row of the
    // block sees only part of it), with the rows' statistics and O rescaled. The scores are
    // kept in base 2 (scaled by scale * log2(e)), so p and c are the ex2 unit's 2^x.
    void scores(const Expr& t0, const Memory& k_tile, const Expr& k_at, const Memory& exchange,
                std::vector<Var>& s, bool masking) {
        const int k_ld = k_ld_;
        const int nt = kKeyBlock / 8;
        // S = Q·Kᵀ for the warp's 16 rows and the block's keys: 8 tiles of 16 x 8, each step of
        // 16 dims across all 8 (independent mma chains back to back). Lane l gives ldmatrix the
        // row of key piece ni + l / 16, dims + 8 (l / 8 % 2): b0 and b1 of two pieces.
        Var k_row = k_.let(k_at + (at_.r8 + at_.j2 * 8) * k_ld + at_.j1 * 4, "k_row");
        for (int c = 0; c < Dp_ / 16; ++c)
            for (int ni = 0; ni < nt; ni += 2) {
                const std::vector<Var> b =
                    k_.load_matrix(k_tile, k_row + ni * 8 * k_ld + c * 8, 4, "k");
                std::vector<Expr> a(q_.begin() + c * 4, q_.begin() + c * 4 + 4);
                for (int h = 0; h < 2; ++h) {
                    const auto first = s.begin() + (ni + h) * 4;
                    k_.mma(t_.input, a, {b[size_t(2 * h)], b[size_t(2 * h + 1)]},
                           std::vector<Var>(first, first + 4));
                }
            }
        // Scaled, and masked past each row's limit; each row's largest, then the quad's.
        std::vector<Var> masked;
        std::vector<Var> largest;
        for (int r = 0; r < 2; ++r) largest.push_back(k_.let(DType::f32, kMinusInf, "largest"));
        for (int ni = 0; ni < nt; ++ni)
            for (int i = 0; i < 4; ++i) {
                const int r = i / 2;
                Var& v = s[size_t(ni * 4 + i)];
                if (masking) {
                    Var key = k_.let(t0 + ni * 8 + at_.tq * 2 + (i & 1), "key");
                    masked.push_back(k_.let(key >= at_.limit[size_t(r)], "masked"));
                    v = select(masked.back(), kMinusInf, v * scale2_);
                } else {
                    v = v * scale2_;
                }
                largest[size_t(r)] = max(largest[size_t(r)], v);
            }
        const std::vector<Var> block_max =
            quad_combine(exchange, largest, [](const Expr& a, const Expr& b) { return max(a, b); });
        std::vector<Var> scale;
        for (int r = 0; r < 2; ++r) {
            Var m_new = k_.let(max(m_[size_t(r)], block_max[size_t(r)]), "m_new");
            scale.push_back(k_.let(
                select(m_[size_t(r)] == kMinusInf, 0.0f, device_exp2(m_[size_t(r)] - m_new)), "c"));
            m_[size_t(r)] = m_new;
        }
        // p = exp(s - m_new) (masked: 0); l's part and O shrink by c first.
        for (int r = 0; r < 2; ++r) l_[size_t(r)] = l_[size_t(r)] * scale[size_t(r)];
        for (size_t i = 0; i < o_.size(); ++i) o_[i] = o_[i] * scale[i % 4 / 2];
        for (int ni = 0; ni < nt; ++ni)
            for (int i = 0; i < 4; ++i) {
                const int r = i / 2;
                Var& v = s[size_t(ni * 4 + i)];
                const Expr p = device_exp2(v - m_[size_t(r)]);
                v = masking ? select(masked[size_t(ni * 4 + i)], 0.0f, p) : p;
                l_[size_t(r)] = l_[size_t(r)] + v;
            }
    }

    // O += P·V: P's accumulators of keys 16kc ... 16kc + 15 are the A operand's layout; lane l
    // gives ldmatrix.trans the row of key 16kc + l % 8 (+ 8: l / 8 % 2) in dim piece dn + l / 16.
    void add_values(const std::vector<Var>& s, const Memory& v_tile, const Expr& v_at) {
        const int v_ld = v_ld_;
        Var v_row = k_.let(v_at + (at_.r8 + at_.j1 * 8) * v_ld + at_.j2 * 4, "v_row");
        for (int kc = 0; kc < kKeyBlock / 16; ++kc) {
            std::vector<Expr> a;
            for (int half : {0, 1})
                for (int r = 0; r < 2; ++r) {
                    const size_t at = size_t((2 * kc + half) * 4 + 2 * r);
                    a.push_back(k_.let(pack_pair(t_.input, s[at], s[at + 1]), "p"));
                }
            for (int dn = 0; dn < Dp_ / 8; dn += 2) {
                const std::vector<Var> b =
                    k_.load_matrix(v_tile, v_row + kc * 16 * v_ld + dn * 4, 4, "v", true);
                for (int h = 0; h < 2; ++h) {
                    const auto first = o_.begin() + (dn + h) * 4;
                    k_.mma(t_.input, a, {b[size_t(2 * h)], b[size_t(2 * h + 1)]},
                           std::vector<Var>(first, first + 4));
                }
            }
        }
    }

    KernelBuilder& k_;
    const Params& p_;
    const AttentionTypes& t_;
    const AttentionSchedule& s_;
    const int D_, Dp_;
    const int k_ld_, v_ld_;      // words between K's tile rows (pairs) and V's (k-major)
    const int k_size_, v_size_;  // words of one stage of each tile
    const Place at_;
    Var scale2_;  // scale * log2(e): scores in base 2
    std::vector<Var> q_, m_, l_, o_;
};

}  // namespace

int64_t tensor_core_shared_bytes(const AttentionSchedule& s, int head_dim) {
    const int Dp = padded_dims(head_dim);
    return 4 * (int64_t{s.stages} * kKeyBlock * (Dp / 2 + kPairPad + tensor_core::k_major_ld(Dp)) +
                int64_t{s.rows} * 4);
}

void tensor_core_form(KernelBuilder& k, const Params& p, const AttentionTypes& t,
                      const AttentionSchedule& s) {
    TensorCore(k, p, t, s).build();
}

}  // namespace kiln::ops::attention_detail
