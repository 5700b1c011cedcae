// The plain C++ reference of attention (kiln/ops/attention.hpp states the definition): per
// query row, the online softmax over key blocks of ops::kAttentionKeyBlock in the op's order, with
// kiln's exp evaluated on the host (kiln::host::exp: the DSL's bits).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/dtype.hpp"
#include "ops/attention/attention.hpp"

namespace kiln::oracle {

// O (dense batch x heads x seq_q x head_dim elements of `out`, raw bytes) from Q, K and V, raw
// element bytes of `input` (f32, f16 or bf16), dense as in kiln/ops/attention.hpp (kv_heads 0:
// heads), with `scale` as given (ops::attention_scale resolves the default). `key_block` is the
// op's; any other size defines a different op (for tests showing that the block size is part of the
// bits). key_lengths, when given (one per batch, each 1 to seq_k): batch b's rows see only its
// first key_lengths[b] keys (the later ones masked, never touched).
std::vector<uint8_t> attention(DType input, DType out, const std::vector<uint8_t>& q,
                               const std::vector<uint8_t>& k, const std::vector<uint8_t>& v,
                               const ops::AttentionShape& shape, bool causal, float scale,
                               int64_t key_block = ops::kAttentionKeyBlock,
                               const std::vector<int64_t>& key_lengths = {});

// The tensor-core class's bound for each output of attention() (same arguments;
// kiln/ops/attention.hpp states it), computed in double from exact scores.
std::vector<double> attention_tensor_core_bound(DType input, const std::vector<uint8_t>& q,
                                                const std::vector<uint8_t>& k,
                                                const std::vector<uint8_t>& v,
                                                const ops::AttentionShape& shape, bool causal,
                                                float scale,
                                                const std::vector<int64_t>& key_lengths = {});

}  // namespace kiln::oracle
