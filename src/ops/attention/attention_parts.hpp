// The pieces of attention's kernel that its forms share: attention.cpp builds the kernel, its
// launch contract and the direct form; attention_staged.cpp the staged form and
// attention_lockstep.cpp the lockstep form.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "kiln/dsl.hpp"
#include "ops/attention/attention.hpp"

namespace kiln::ops::attention_detail {

inline constexpr int kKeyBlock = kAttentionKeyBlock;
inline constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
// Staged form: dims of Q and K per shared tile, keys of V per shared tile.
inline constexpr int kDimStep = 16;
inline constexpr int kKeyStep = 16;
// Lockstep form: keys whose scores advance side by side, accumulators a pass over a block's keys.
inline constexpr int kScoreKeys = 8;
inline constexpr int kValueDims = 16;
static_assert(kKeyBlock % kScoreKeys == 0);
// Elements each row of a shared tile is padded by (a multiple of 4: runs stay 16-byte aligned).
inline constexpr int kTilePad = 4;

// What the forms read (attention_body's views) and where each output goes.
struct Params : AttentionViews {
    AttentionStore store;
};

// The keys every row of (batch, head) `bh` may see: its batch's key length where the views give
// one (a variable of the thread), else nothing.
std::optional<Expr> batch_keys(KernelBuilder& k, const Params& p, const Expr& bh);
// The query rows a block of the staged, lockstep and tensor-core forms takes: block x takes
// (batch, head) bh = x / blocks_q and its query block counted from the last, rows i0 ... i0 +
// rows - 1, so the blocks with the most keys (causal) start first.
struct QueryBlock {
    Var bh, i0;
};
QueryBlock query_block(KernelBuilder& k, const Params& p, int rows);
// Keys query row i sees (the op's limit, capped by the batch's keys), at most seq_k also for rows
// past seq_q (a staged block's tail rows, computed but never stored).
Expr key_limit(const Params& p, const std::optional<Expr>& keys, const Expr& i);
// The K and V row of (batch, head) `bh`: batch bh / heads, kv head (bh % heads) / group.
Expr kv_row(const Params& p, const Expr& bh);
// The op's softmax weight w(x): +0 below kAttentionWeightFloor, else exp(x) (of the floor where x
// is below it, so that no lane of a vector computes a subnormal; NaN stays NaN).
Expr weight(const Expr& x);
// The op's c: the factor by which l and acc shrink when the running max moves from m to m_new.
Expr rescale(const Expr& m, const Expr& m_new);
// An f32 value as O's dtype (one rounding).
Expr to_output(const AttentionTypes& t, const Expr& v);

// The staged form's geometry for a head_dim: threads along the keys of the score tile (and the
// dims of the acc tile), dims of acc per thread, the dims the acc tiles span (>= D) and the
// shared tiles' row lengths.
struct Geometry {
    int across, td, width;
    int q_ld, k_ld, p_ld, v_ld;
    int64_t shared_bytes;
};

Geometry geometry(const AttentionSchedule& s, int head_dim);

// The staged form (AttentionSchedule): a block takes `rows` query rows of one (batch, head).
void staged_form(KernelBuilder& k, const Params& p, const AttentionTypes& t,
                 const AttentionSchedule& s);

// The lockstep form (AttentionSchedule): one thread per query row, a block's `rows` rows of one
// (batch, head) walking the keys together.
void lockstep_form(KernelBuilder& k, const Params& p, const AttentionTypes& t,
                   const AttentionSchedule& s);
// The lockstep form's accumulator rows (head_dim rounded up to whole kValueDims) and tiles' bytes.
int lockstep_dims(int head_dim);
int64_t lockstep_shared_bytes(const AttentionSchedule& s, int head_dim);

// The tensor-core form (AttentionSchedule::warps): each warp's 16 rows in mma steps.
void tensor_core_form(KernelBuilder& k, const Params& p, const AttentionTypes& t,
                      const AttentionSchedule& s);
int64_t tensor_core_shared_bytes(const AttentionSchedule& s, int head_dim);

}  // namespace kiln::ops::attention_detail
