// attention's oracle: the op's loops as kiln/ops/attention.hpp writes them, one query row at a
// time.
#include "oracle/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/error.hpp"
#include "kiln/host_math.hpp"
#include "kiln/semantics.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

namespace {

// Runs row(q_at, kv_at, limit) for every query row: its first element in Q (and O), its K and V
// rows' first element, and the keys it sees (causal, capped by its batch's key length).
template <typename Row>
void each_row(const ops::AttentionShape& shape, bool causal,
              const std::vector<int64_t>& key_lengths, const Row& row) {
    const int64_t B = shape.batch, H = shape.heads, Sq = shape.seq_q, Sk = shape.seq_k;
    const int64_t Hkv = shape.kv_heads == 0 ? H : shape.kv_heads, D = shape.head_dim;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < Sq; ++i) {
                int64_t limit = causal ? Sk - Sq + i + 1 : Sk;
                if (!key_lengths.empty())
                    limit = std::min(limit, key_lengths[static_cast<size_t>(b)]);
                row(((b * H + h) * Sq + i) * D, (b * Hkv + h / (H / Hkv)) * Sk * D, limit);
            }
}

// The op's softmax weight w(x): +0 below the floor, else kiln's exp.
float weight(float x) {
    return x < ops::kAttentionWeightFloor ? 0.0f : host::exp(x);
}

}  // namespace

std::vector<uint8_t> attention(DType input, DType out, const std::vector<uint8_t>& q,
                               const std::vector<uint8_t>& k, const std::vector<uint8_t>& v,
                               const ops::AttentionShape& shape, bool causal, float scale,
                               int64_t key_block, const std::vector<int64_t>& key_lengths) {
    if (input != DType::f32 && input != DType::f16 && input != DType::bf16)
        fail("oracle attention: inputs {}; expected f32, f16 or bf16", name(input));
    if (out != DType::f32 && out != input)
        fail("oracle attention: output {}; expected f32 or {}", name(out), name(input));
    const int64_t B = shape.batch, H = shape.heads, Sq = shape.seq_q, Sk = shape.seq_k;
    const int64_t D = shape.head_dim;
    if (causal && Sq > Sk) fail("oracle attention: causal with seq_q {} > seq_k {}", Sq, Sk);
    if (key_block < 1) fail("oracle attention: key block {}; expected >= 1", key_block);
    const int64_t KB = key_block;
    if (!key_lengths.empty() && static_cast<int64_t>(key_lengths.size()) != B)
        fail("oracle attention: {} key lengths for batch {}", key_lengths.size(), B);
    for (int64_t len : key_lengths)
        if (len < 1 || len > Sk)
            fail("oracle attention: key length {}; expected 1 to seq_k = {}", len, Sk);
    std::vector<uint8_t> o(static_cast<size_t>(B * H * Sq * D) * size_of(out));
    dispatch(input, [&]<DType T>() {
        if constexpr (T == DType::f32 || T == DType::f16 || T == DType::bf16) {
            using S = Scalar<T>;
            using V = typename S::V;
            auto at = [](const std::vector<uint8_t>& bytes, int64_t i) {
                return S::to_f32(load<V>(bytes, static_cast<size_t>(i)));
            };
            std::vector<float> acc(static_cast<size_t>(D)), s(static_cast<size_t>(KB));
            each_row(shape, causal, key_lengths, [&](int64_t q_at, int64_t kv_at, int64_t limit) {
                float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
                std::fill(acc.begin(), acc.end(), 0.0f);
                for (int64_t t0 = 0; t0 < limit; t0 += KB) {
                    const int64_t n = std::min(KB, limit - t0);
                    float m_new = m;
                    for (int64_t j = 0; j < n; ++j) {
                        float dot = 0.0f;
                        for (int64_t d = 0; d < D; ++d)
                            dot = std::fma(at(q, q_at + d), at(k, kv_at + (t0 + j) * D + d), dot);
                        s[static_cast<size_t>(j)] = dot * scale;
                        m_new = semantics::kiln_max_f32(m_new, s[static_cast<size_t>(j)]);
                    }
                    const float c =
                        m == -std::numeric_limits<float>::infinity() ? 0.0f : weight(m - m_new);
                    l = l * c;
                    for (float& a : acc) a = a * c;
                    for (int64_t j = 0; j < n; ++j) {
                        const float p = weight(s[static_cast<size_t>(j)] - m_new);
                        l = l + p;
                        for (int64_t d = 0; d < D; ++d)
                            acc[static_cast<size_t>(d)] = std::fma(
                                p, at(v, kv_at + (t0 + j) * D + d), acc[static_cast<size_t>(d)]);
                    }
                    m = m_new;
                }
                for (int64_t d = 0; d < D; ++d) {
                    const float r = acc[static_cast<size_t>(d)] / l;
                    if (out == DType::f32)
                        store<float>(o, static_cast<size_t>(q_at + d), r);
                    else
                        store<V>(o, static_cast<size_t>(q_at + d), S::from_f32(r));
                }
            });
        }
    });
    return o;
}

std::vector<double> attention_tensor_core_bound(DType input, const std::vector<uint8_t>& q,
                                                const std::vector<uint8_t>& k,
                                                const std::vector<uint8_t>& v,
                                                const ops::AttentionShape& shape, bool causal,
                                                float scale,
                                                const std::vector<int64_t>& key_lengths) {
    if (input != DType::f16 && input != DType::bf16)
        fail("oracle attention_tensor_core_bound: inputs {}; expected f16 or bf16", name(input));
    const int64_t B = shape.batch, H = shape.heads, Sq = shape.seq_q, Sk = shape.seq_k;
    const int64_t D = shape.head_dim;
    const double u = input == DType::bf16 ? 0x1p-8 : 0x1p-11;
    const double sums = static_cast<double>(Sk + D + 16) * 0x1p-23;
    // A p below f32's normal range (flushed by the ex2 unit) or rounded to the input dtype below
    // its normal range: off by at most 2^-126, or half f16's smallest step.
    const double underflow = input == DType::bf16 ? 0x1p-126 : 0x1p-25;
    const double tiny = static_cast<double>(Sk + D + 16) * 0x1p-126;  // f32's subnormal range
    std::vector<double> bound(static_cast<size_t>(B * H * Sq * D));
    auto at = [&](const std::vector<uint8_t>& bytes, int64_t i) -> double {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        return input == DType::bf16 ? semantics::bf16_to_f32(h) : semantics::f16_to_f32(h);
    };
    std::vector<double> s(static_cast<size_t>(Sk)), e(static_cast<size_t>(Sk));
    each_row(shape, causal, key_lengths, [&](int64_t q_at, int64_t kv_at, int64_t limit) {
        double largest = -std::numeric_limits<double>::infinity(), e_max = 0;
        for (int64_t j = 0; j < limit; ++j) {
            double dot = 0, magnitude = 0;
            for (int64_t d = 0; d < D; ++d) {
                const double t = at(q, q_at + d) * at(k, kv_at + j * D + d);
                dot += t;
                magnitude += std::fabs(t);
            }
            s[static_cast<size_t>(j)] = dot * scale;
            largest = std::max(largest, s[static_cast<size_t>(j)]);
            e_max = std::max(e_max,
                             std::fabs(scale) * 0x1p-22 * static_cast<double>(D + 16) * magnitude);
        }
        double l = 0;
        for (int64_t j = 0; j < limit; ++j) {
            e[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - largest);
            l += e[static_cast<size_t>(j)];
        }
        const double factor = 2 * u + 8 * e_max + sums;
        for (int64_t d = 0; d < D; ++d) {
            double weighted = 0, magnitude = 0;
            for (int64_t j = 0; j < limit; ++j) {
                const double vj = std::fabs(at(v, kv_at + j * D + d));
                weighted += e[static_cast<size_t>(j)] * vj;
                magnitude += vj;
            }
            bound[static_cast<size_t>(q_at + d)] =
                factor * weighted / l + underflow * magnitude + tiny;
        }
    });
    return bound;
}

}  // namespace kiln::oracle
