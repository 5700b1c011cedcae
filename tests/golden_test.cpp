// Golden outputs: the exact bits of rms_norm (f32, f16, bf16), matvec_q8, matmul, conv1d and
// attention for fixed inputs, pinned as hashes. The other tests compare kernels with the oracle,
// which follows the op's own definition, so a change to that definition made in kernel and oracle
// alike passes them; it fails here, and the pinned hash is then updated on purpose, with the reason
// in the commit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "kiln/semantics.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/attention.hpp"
#include "oracle/conv1d.hpp"
#include "oracle/matmul.hpp"
#include "oracle/matvec_q8.hpp"
#include "oracle/rms_norm.hpp"

using namespace kiln;

namespace {

using Bytes = std::vector<uint8_t>;

// FNV-1a over the bytes: a hash written out here so the pinned values depend on nothing else.
uint64_t fnv1a(const Bytes& bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
    return h;
}

// Values k/64 for k uniform in [-512, 512] drawn from mt19937's raw output (the same on every
// standard library), stored as `type`.
Bytes fixed_values(DType type, size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    Bytes out(count * size_of(type));
    for (size_t i = 0; i < count; ++i) {
        const float f = static_cast<float>(static_cast<int>(rng() % 1025) - 512) / 64.0f;
        if (type == DType::f32) {
            std::memcpy(&out[i * 4], &f, 4);
        } else {
            const uint16_t h =
                type == DType::f16 ? semantics::f32_to_f16(f) : semantics::f32_to_bf16(f);
            std::memcpy(&out[i * 2], &h, 2);
        }
    }
    return out;
}

// Q8_0 blocks from raw mt19937_64 output: scales with exponents 5..20 (|d| from 2^-10 to 2^5).
Bytes fixed_q8(int64_t blocks, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes out(static_cast<size_t>(blocks * ops::kQ8BlockBytes));
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* block = out.data() + b * ops::kQ8BlockBytes;
        const uint64_t r = rng();
        const auto d = static_cast<uint16_t>(((r & 1) << 15) | ((5 + (r >> 1) % 16) << 10) |
                                             ((r >> 8) & 0x3ff));
        std::memcpy(block, &d, 2);
        for (int i = 0; i < ops::kQ8BlockValues; ++i) block[2 + i] = static_cast<uint8_t>(rng());
    }
    return out;
}

struct RmsNormGolden {
    DType type;
    uint64_t hash;
};

// rows 5, n 300 (ragged against the fold's 256 lanes), eps 1e-5.
constexpr int64_t kRows = 5, kN = 300;
constexpr float kEps = 1e-5f;

class Golden : public ::testing::TestWithParam<RmsNormGolden> {};

TEST_P(Golden, RmsNormOutputBitsArePinned) {
    const auto [type, pinned] = GetParam();
    const Bytes x = fixed_values(type, kRows * kN, 11), w = fixed_values(type, kN, 12);
    Bytes out(x.size());
    oracle::rms_norm(type, kN, kEps, x, w, out);
    EXPECT_EQ(fnv1a(out), pinned) << name(type) << ": the oracle's bits changed; got 0x" << std::hex
                                  << fnv1a(out);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer xb(*d, type, kRows * kN), wb(*d, type, kN);
        xb.upload_bytes(x);
        wb.upload_bytes(w);
        const auto& s = ops::rms_norm_variants().front();
        auto r = ops::rms_norm_bench(*d, xb, wb, kRows, kN, kEps, s, 1);
        EXPECT_EQ(fnv1a(r.output.download_bytes()), pinned) << s.name;
    }
}

INSTANTIATE_TEST_SUITE_P(EachDtype, Golden,
                         ::testing::Values(RmsNormGolden{DType::f32, 0x9a6ccf189c38ed2bull},
                                           RmsNormGolden{DType::f16, 0x090f6c1fd707afb9ull},
                                           RmsNormGolden{DType::bf16, 0x410a245c5c4464a0ull}),
                         [](const auto& info) { return std::string(name(info.param.type)); });

TEST(Golden, MatvecQ8OutputBitsArePinned) {
    const int64_t rows = 7, k = 640;  // 10 pairs a row
    const Bytes w = fixed_q8(rows * k / 32, 21), x = fixed_q8(k / 32, 22);
    const std::vector<float> y = oracle::matvec_q8(w, x, rows, k);
    Bytes bits(y.size() * 4);
    std::memcpy(bits.data(), y.data(), bits.size());
    constexpr uint64_t kPinned = 0x504e52a8c9665d62ull;
    EXPECT_EQ(fnv1a(bits), kPinned)
        << "the oracle's bits changed; got 0x" << std::hex << fnv1a(bits);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer wb(*d, DType::u8, w.size()), xb(*d, DType::u8, x.size());
        wb.upload_bytes(w);
        xb.upload_bytes(x);
        auto r = ops::matvec_q8_bench(*d, wb, xb, rows, k,
                                      ops::matvec_q8_variants().front().schedule, 1);
        EXPECT_EQ(fnv1a(r.output.download_bytes()), kPinned);
    }
}

// f32 values from mt19937's raw 32-bit output: a signed integer times 2^-30, so every value
// has a full mantissa and the sums round: the order of the terms shows in the bits.
Bytes fixed_full_floats(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    Bytes out(count * 4);
    for (size_t i = 0; i < count; ++i) {
        const float f = std::ldexp(static_cast<float>(static_cast<int32_t>(rng())), -30);
        std::memcpy(&out[i * 4], &f, 4);
    }
    return out;
}

TEST(Golden, MatmulOutputBitsArePinned) {
    const ops::MatmulShape s{2, 5, 7, 300};  // 300 terms per output: two chunks of k
    const Bytes a = fixed_full_floats(2 * 5 * 300, 31), b = fixed_full_floats(2 * 300 * 7, 32);
    const ops::MatmulOperand av{0, 5 * 300, 0, false}, bv{0, 300 * 7, 0, false};
    const Bytes c = oracle::matmul(DType::f32, DType::f32, a, av, b, bv, s);
    constexpr uint64_t kPinned = 0xca11b639cb0a2bcdull;
    EXPECT_EQ(fnv1a(c), kPinned) << "the oracle's bits changed; got 0x" << std::hex << fnv1a(c);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer ab(*d, DType::f32, a.size() / 4), bb(*d, DType::f32, b.size() / 4);
        ab.upload_bytes(a);
        bb.upload_bytes(b);
        auto r =
            ops::matmul_bench(*d, ab, av, bb, bv, s, DType::f32, ops::matmul_variants().front(), 1);
        EXPECT_EQ(fnv1a(r.output.download_bytes()), kPinned);
    }
}

// Strided, dilated, grouped and padded: 50 terms per output, some taps in the padding.
TEST(Golden, Conv1dOutputBitsArePinned) {
    const ops::Conv1dShape s{2, 20, 40, 6, 5, {2, 3, 2, 2}};
    const ops::Conv1dView xv{0, 20 * 40, 40};
    const Bytes x = fixed_full_floats(2 * 20 * 40, 41), w = fixed_full_floats(6 * 10 * 5, 42);
    const Bytes y = oracle::conv1d(DType::f32, DType::f32, x, xv, w, s);
    constexpr uint64_t kPinned = 0xc01af6f943702a84ull;
    EXPECT_EQ(fnv1a(y), kPinned) << "the oracle's bits changed; got 0x" << std::hex << fnv1a(y);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer xb(*d, DType::f32, x.size() / 4), wb(*d, DType::f32, w.size() / 4);
        xb.upload_bytes(x);
        wb.upload_bytes(w);
        auto r =
            ops::conv1d_bench(*d, xb, xv, wb, s, DType::f32, ops::conv1d_variants().front(), 1);
        EXPECT_EQ(fnv1a(r.output.download_bytes()), kPinned);
    }
}

// Causal, grouped heads, 130 keys: three key blocks, the last short, and kiln's exp in every p_j.
TEST(Golden, AttentionOutputBitsArePinned) {
    const ops::AttentionShape s{1, 2, 1, 5, 130, 24};
    const Bytes q = fixed_full_floats(2 * 5 * 24, 41), k = fixed_full_floats(130 * 24, 42),
                v = fixed_full_floats(130 * 24, 43);
    const ops::AttentionOptions options{true, std::nullopt, DType::f32};
    const Bytes o = oracle::attention(DType::f32, DType::f32, q, k, v, s, true,
                                      ops::attention_scale(s, options));
    constexpr uint64_t kPinned = 0x9b97d7b608977d27ull;
    EXPECT_EQ(fnv1a(o), kPinned) << "the oracle's bits changed; got 0x" << std::hex << fnv1a(o);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Buffer qb(*d, DType::f32, q.size() / 4), kb(*d, DType::f32, k.size() / 4),
            vb(*d, DType::f32, v.size() / 4);
        qb.upload_bytes(q);
        kb.upload_bytes(k);
        vb.upload_bytes(v);
        auto r =
            ops::attention_bench(*d, qb, kb, vb, s, options, ops::attention_variants().front(), 1);
        EXPECT_EQ(fnv1a(r.output.download_bytes()), kPinned);
    }
}

}  // namespace
