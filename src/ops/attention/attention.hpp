// attention's kernel body for callers that declare their own parameters (the graph planner's
// launches with fused prologues and epilogues); the op itself is declared in
// kiln/ops/attention.hpp.
#pragma once

#include <functional>

#include "kiln/dsl.hpp"
#include "kiln/ops/attention.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops {

// The kernel's work for a caller that writes O itself (a graph planner's epilogue): Q, K, V and the
// sizes as expressions (parameters or constants; Q, K and V dense as above); each output's f32
// value acc[d] / l goes to store(e, value) with e its index in a dense batch x heads x seq_q x
// head_dim O, once per output, never for a row past seq_q. The caller checks the sizes
// (attention_kernel's contract). Q, K and V as ElementReads (ops/kernel_parts.hpp).
// key_length, when set, gives batch b's key length (1 to seq_k, i32; the caller checks it): that
// batch's rows see only its first key_length(b) keys, the later ones masked as causal masks them
// (a padded batch of sequences). It is called once per thread.
struct AttentionViews {
    ElementRead q, k, v;
    Expr batch, heads, kv_heads, seq_q, seq_k, causal, scale;
    std::function<Expr(const Expr& batch)> key_length = {};
};
using AttentionStore = std::function<void(const Expr& element, const Expr& value)>;
void attention_body(KernelBuilder& k, const AttentionViews& views, const AttentionTypes& types,
                    const AttentionSchedule& schedule, const AttentionStore& store);

}  // namespace kiln::ops
