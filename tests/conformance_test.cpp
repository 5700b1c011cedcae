// The foundation's conformance suite: every test kernel, at several schedules, on every device,
// bitwise against the oracle.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "kiln/compile.hpp"
#include "ops/test_kernels.hpp"
#include "oracle/scalar.hpp"
#include "oracle/test_kernels.hpp"
#include "support/everywhere.hpp"

using namespace kiln;
using kiln::test::HostBuffer;

namespace {

struct MixCase {
    DType type;
    int block;
    int per_thread;
};

class ElementwiseMix : public ::testing::TestWithParam<MixCase> {};

TEST_P(ElementwiseMix, MatchesOracleEverywhere) {
    const auto [type, block, per_thread] = GetParam();
    const size_t n = 3001;  // ragged against every block and per-thread count
    auto a = test::random_buffer(type, n, 1), b = test::random_buffer(type, n, 2);
    HostBuffer want = test::poisoned(type, n);
    oracle::elementwise_mix(type, a.bytes, b.bytes, want.bytes);
    test::expect_everywhere(ops::elementwise_mix(type, block, per_thread),
                            ops::elementwise_grid(static_cast<int64_t>(n), block, per_thread),
                            {a, b, test::poisoned(type, n)}, 2, want);
}

std::vector<MixCase> mix_cases() {
    std::vector<MixCase> cases;
    for (DType t : all_dtypes) {
        cases.push_back({t, 64, 1});
        cases.push_back({t, 128, 4});
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, ElementwiseMix, ::testing::ValuesIn(mix_cases()),
                         [](const auto& info) {
                             return fmt::format("{}_b{}_t{}", name(info.param.type),
                                                info.param.block, info.param.per_thread);
                         });

TEST(Casts, EveryPairAtItsEdges) {
    const size_t n = 2048;
    std::vector<ir::Kernel> pairs;
    for (DType from : all_dtypes)
        for (DType to : all_dtypes)
            if (to != from) pairs.push_back(ops::cast_kernel(from, to, 128));
    test::compile_together(pairs);
    for (DType from : all_dtypes) {
        auto x = test::random_buffer(from, n, 7);
        if (from == DType::f32) {
            // Ties and edges of f32 -> f16 / bf16 and f32 -> integers.
            const uint32_t extra[] = {0x3f801000, 0x3f803000, 0x33000000, 0x33000001, 0x387fc000,
                                      0x477ff000, 0x477fefff, 0x3f808000, 0x3f818000, 0x4f000000,
                                      0xcf000000, 0x4effffff, 0x5f000000, 0xdf000000, 0x437f0000,
                                      0x43800000, 0xc3000000, 0xc3010000, 0x7f7fffff, 0x7fa00000};
            for (size_t i = 0; i < std::size(extra); ++i)
                std::memcpy(&x.bytes[(100 + i) * 4], &extra[i], 4);
        }
        for (DType to : all_dtypes) {
            if (to == from) continue;
            SCOPED_TRACE(fmt::format("{} -> {}", name(from), name(to)));
            HostBuffer want = test::poisoned(to, n);
            oracle::cast(from, to, x.bytes, want.bytes);
            test::expect_everywhere(ops::cast_kernel(from, to, 128), (n + 127) / 128,
                                    {x, test::poisoned(to, n)}, 1, want);
        }
    }
}

TEST(Casts, KnownValues) {
    // Independent of the oracle: f32 -> f16 / bf16 ties to even, NaN, infinities, subnormals.
    EXPECT_EQ(semantics::f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(semantics::f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(semantics::f32_to_f16(65519.996f), 0x7bff);
    EXPECT_EQ(semantics::f32_to_f16(65520.0f), 0x7c00);  // the midpoint rounds to even: inf
    EXPECT_EQ(semantics::f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie -> even (down)
    EXPECT_EQ(semantics::f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);  // tie -> even (up)
    EXPECT_EQ(semantics::f32_to_f16(5.9604645e-8f), 0x0001);       // smallest subnormal
    EXPECT_EQ(semantics::f32_to_f16(2.9802322e-8f), 0x0000);       // half of it: tie -> 0
    EXPECT_EQ(semantics::f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(semantics::f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_EQ(semantics::f32_to_f16(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
    EXPECT_EQ(semantics::f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);  // tie -> even (down)
    EXPECT_EQ(semantics::f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);  // tie -> even (up)
    EXPECT_EQ(semantics::f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(semantics::f32_to_bf16(std::numeric_limits<float>::quiet_NaN()) & 0x7fc0, 0x7fc0);
    EXPECT_EQ(semantics::f16_to_f32(0x0001), 5.9604645e-8f);
    EXPECT_EQ(semantics::kiln_f32_to_i32(3e9f), INT32_MAX);
    EXPECT_EQ(semantics::kiln_f32_to_i32(-3e9f), INT32_MIN);
    EXPECT_EQ(semantics::kiln_f32_to_i32(std::numeric_limits<float>::quiet_NaN()), 0);
    EXPECT_EQ(semantics::kiln_f32_to_u8(-1.5f), 0);
    EXPECT_EQ(semantics::kiln_f32_to_u8(255.9f), 255);
    EXPECT_EQ(semantics::kiln_div_i32(INT32_MIN, -1), INT32_MIN);
    EXPECT_EQ(semantics::kiln_div_i32(7, 0), 0);
    EXPECT_EQ(semantics::kiln_rem_i32(7, 0), 7);
}

TEST(Casts, F16ConversionMatchesTheCompilersFloat16) {
    // Every f32 exponent, many mantissas: kiln's f32 -> f16 equals GCC's _Float16 conversion.
    std::mt19937 rng(3);
    for (int i = 0; i < 2000000; ++i) {
        const uint32_t bits = rng();
        float f;
        std::memcpy(&f, &bits, 4);
        if (std::isnan(f)) continue;
        const _Float16 h = static_cast<_Float16>(f);
        uint16_t hb;
        std::memcpy(&hb, &h, 2);
        ASSERT_EQ(semantics::f32_to_f16(f), hb) << std::hex << bits;
        ASSERT_EQ(std::bit_cast<uint32_t>(semantics::f16_to_f32(hb)),
                  std::bit_cast<uint32_t>(static_cast<float>(h)));
    }
}

// Two f32 values rounded to halves and packed into a u32 (a tensor-core operand pair): CUDA
// writes the pattern as one cvt of both (the dialect's pack_halves); every device gives the two
// casts' bits, NaN payloads and signs included, with either or both halves a NaN.
TEST(Casts, PairsOfHalvesPackAsTwoCasts) {
    const size_t n = 4096;
    HostBuffer x = test::random_buffer(DType::f32, 2 * n, 11);
    const uint32_t edges[] = {0x3f808000, 0x3f818000, 0x3f801000, 0x3f803000, 0x7fa00000,
                              0xffc00001, 0x7f800001, 0xff800000, 0x477ff000, 0x33000001,
                              0x00000001, 0x80000000, 0x7f7fffff, 0xfff00000};
    for (size_t i = 0; i < std::size(edges); ++i) {
        std::memcpy(&x.bytes[2 * i * 4], &edges[i], 4);  // as the low half
        std::memcpy(&x.bytes[(2 * (i + std::size(edges)) + 1) * 4], &edges[i], 4);  // the high
        std::memcpy(&x.bytes[2 * (i + 2 * std::size(edges)) * 4], &edges[i], 4);    // both
        std::memcpy(&x.bytes[(2 * (i + 2 * std::size(edges)) + 1) * 4], &edges[i], 4);
    }
    for (DType half : {DType::f16, DType::bf16}) {
        SCOPED_TRACE(name(half));
        KernelBuilder k(fmt::format("pack_{}", name(half)), 128);
        auto in = k.input("x", DType::f32);
        auto out = k.output("y", DType::u32);
        Expr i = k.absolute_pos();
        auto bits = [&](const Expr& v) { return bitcast(DType::u32, cast(half, v)); };
        k.if_(i < out.len(), [&] { out[i] = bits(in[2 * i]) | (bits(in[2 * i + 1]) << 16); });
        const ir::Kernel kernel = k.finish();
        EXPECT_NE(generate_source(Backend::cuda, std::vector{kernel})
                      .find(fmt::format("kiln_pack_{}x2(", name(half))),
                  std::string::npos);
        HostBuffer want = test::poisoned(DType::u32, n);
        for (size_t j = 0; j < n; ++j) {
            float pair[2];
            std::memcpy(pair, &x.bytes[2 * j * 4], 8);
            auto narrow = [&](float f) -> uint32_t {
                return half == DType::bf16 ? semantics::f32_to_bf16(f) : semantics::f32_to_f16(f);
            };
            const uint32_t word = narrow(pair[0]) | (narrow(pair[1]) << 16);
            std::memcpy(&want.bytes[j * 4], &word, 4);
        }
        test::expect_everywhere(kernel, n / 128, {x, test::poisoned(DType::u32, n)}, 1, want);
    }
}

TEST(Casts, EveryHalfWidensExactlyOnEveryDevice) {
    // All 65536 halves: the f32 the compiler's _Float16 gives, and for a NaN its sign and payload
    // in f32's top mantissa bits; then every device gives the same bits.
    HostBuffer x{DType::f16, {}}, want = test::poisoned(DType::u32, 65536);
    for (uint32_t h = 0; h < 65536; ++h) {
        const auto hb = static_cast<uint16_t>(h);
        const uint32_t got = std::bit_cast<uint32_t>(semantics::f16_to_f32(hb));
        const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
        const uint32_t expected =
            nan ? ((h & 0x8000) << 16) | 0x7f800000 | ((h & 0x3ff) << 13)
                : std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<_Float16>(hb)));
        ASSERT_EQ(got, expected) << std::hex << h;
        x.bytes.push_back(static_cast<uint8_t>(h & 0xff));
        x.bytes.push_back(static_cast<uint8_t>(h >> 8));
        std::memcpy(want.bytes.data() + 4 * h, &got, 4);
    }
    KernelBuilder k("widen_f16", 128);
    auto in = k.input("x", DType::f16);
    auto out = k.output("y", DType::u32);
    Expr i = k.absolute_pos();
    k.if_(i < out.len(), [&] { out[i] = bitcast(DType::u32, cast(DType::f32, in[i])); });
    test::expect_everywhere(k.finish(), 65536 / 128, {x, test::poisoned(DType::u32, 65536)}, 1,
                            want);
}

struct FoldCase {
    DType type;
    ir::FoldOp op;
    int lanes;
    int chunk;
    int threads;
    int block;
    int unroll = 1;
};

class CanonicalFold : public ::testing::TestWithParam<FoldCase> {};

TEST_P(CanonicalFold, MatchesOracleAtRaggedExtents) {
    const FoldCase c = GetParam();
    const Fold fold = Fold{{c.op, c.lanes, c.chunk, c.threads, c.unroll}};
    const int64_t rows = 5;
    // 128 and 256: the lane loops of some schedules run exactly once (lowered without loops).
    constexpr int64_t extents[] = {1, 7, 100, 128, 256, 1000, 4099};
    std::vector<ir::Kernel> kernels;
    for (int64_t n : extents) kernels.push_back(ops::row_fold(c.type, n, fold, c.block));
    test::compile_together(kernels);
    for (int64_t n : extents) {
        SCOPED_TRACE(fmt::format("n = {}", n));
        auto x =
            test::random_buffer(c.type, static_cast<size_t>(rows * n), static_cast<uint64_t>(n));
        if (is_float(c.type)) {  // finite values of moderate size, so sums stay informative
            // Products: factors near 1 of either sign, so a row's product neither vanishes nor
            // overflows at once.
            const bool prod = c.op == ir::FoldOp::prod;
            std::mt19937 rng(static_cast<uint32_t>(n));
            std::uniform_real_distribution<float> dist(prod ? 0.97f : -3.0f, prod ? 1.03f : 3.0f);
            for (size_t i = 0; i < x.count(); ++i) {
                const float f = prod && (rng() & 1) ? -dist(rng) : dist(rng);
                if (c.type == DType::f32)
                    std::memcpy(&x.bytes[i * 4], &f, 4);
                else {
                    const uint16_t h =
                        c.type == DType::f16 ? semantics::f32_to_f16(f) : semantics::f32_to_bf16(f);
                    std::memcpy(&x.bytes[i * 2], &h, 2);
                }
            }
        }
        if (c.op == ir::FoldOp::prod && is_integer(c.type))  // odd factors: no product wraps to 0
            for (size_t i = 0; i < x.count(); ++i) x.bytes[i * size_of(c.type)] |= 1;
        HostBuffer want = test::poisoned(c.type, rows);
        oracle::row_fold(c.type, n, fold.spec, x.bytes, want.bytes);
        test::expect_everywhere(ops::row_fold(c.type, n, fold, c.block),
                                ops::row_fold_grid(rows, fold, c.block),
                                {x, test::poisoned(c.type, rows)}, 1, want);
    }
}

INSTANTIATE_TEST_SUITE_P(Schedules, CanonicalFold,
                         ::testing::Values(FoldCase{DType::f32, ir::FoldOp::sum, 32, 4, 1, 64},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 32, 4, 4, 64},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 32, 4, 32, 64},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 32, 4, 32, 128},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 256, 1, 256, 256},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 64, 2, 16, 32},
                                           FoldCase{DType::f32, ir::FoldOp::max, 32, 4, 8, 64},
                                           FoldCase{DType::f32, ir::FoldOp::min, 16, 3, 16, 64},
                                           FoldCase{DType::f16, ir::FoldOp::sum, 32, 2, 32, 64},
                                           FoldCase{DType::bf16, ir::FoldOp::sum, 32, 2, 2, 64},
                                           FoldCase{DType::i32, ir::FoldOp::sum, 32, 4, 32, 64},
                                           FoldCase{DType::i64, ir::FoldOp::max, 8, 1, 2, 32},
                                           FoldCase{DType::u8, ir::FoldOp::min, 4, 4, 4, 16},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 32, 4, 32, 64, 3},
                                           FoldCase{DType::f32, ir::FoldOp::sum, 32, 2, 8, 64, 2},
                                           FoldCase{DType::i32, ir::FoldOp::sum, 32, 1, 1, 64, 4},
                                           FoldCase{DType::f32, ir::FoldOp::prod, 32, 4, 32, 64},
                                           FoldCase{DType::bf16, ir::FoldOp::prod, 16, 2, 4, 64, 2},
                                           FoldCase{DType::i32, ir::FoldOp::prod, 64, 2, 64, 128}),
                         [](const auto& info) {
                             const FoldCase& c = info.param;
                             return fmt::format("{}_{}_w{}_v{}_t{}_b{}_u{}", name(c.type),
                                                ir::name(c.op), c.lanes, c.chunk, c.threads,
                                                c.block, c.unroll);
                         });

TEST(CanonicalFold, EveryScheduleGivesTheSameBits) {
    // Direct variant-to-variant identity, independent of the oracle.
    const int64_t n = 777, rows = 9;
    auto x = test::random_buffer(DType::f32, rows * n, 11);
    for (size_t i = 0; i < x.count(); ++i) {
        const float f = static_cast<float>(i % 97) * 0.37f - 11.0f;
        std::memcpy(&x.bytes[i * 4], &f, 4);
    }
    for (Device* d : devices()) {
        std::vector<HostBuffer> outs;
        for (int threads : {1, 2, 8, 32}) {
            const Fold f = Fold::sum().lanes(32).chunk(4).threads(threads);
            outs.push_back(test::run_on(*d, ops::row_fold(DType::f32, n, f, 64),
                                        ops::row_fold_grid(rows, f, 64),
                                        {x, test::poisoned(DType::f32, rows)})[1]);
        }
        for (size_t i = 1; i < outs.size(); ++i)
            EXPECT_TRUE(test::identical(outs[i], outs[0])) << d->info().id;
    }
}

TEST(SharedMemory, TiledMatmulWithBarriersInALoop) {
    for (int tile : {4, 8}) {
        const int64_t m = 33, n = 17, k = 29;
        std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
            c(static_cast<size_t>(m * n));
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> dist(-1, 1);
        for (auto& v : a) v = dist(rng);
        for (auto& v : b) v = dist(rng);
        oracle::matmul(m, n, k, a, b, c);
        auto bytes = [](const std::vector<float>& v) {
            HostBuffer h{DType::f32, test::Bytes(v.size() * 4)};
            std::memcpy(h.bytes.data(), v.data(), h.bytes.size());
            return h;
        };
        test::expect_everywhere(ops::tiled_matmul(n, k, tile), ops::tiled_matmul_grid(m, n, tile),
                                {bytes(a), bytes(b), test::poisoned(DType::f32, c.size())}, 2,
                                bytes(c));
    }
}

TEST(SharedMemory, BlockReverseThroughATile) {
    for (DType t : {DType::f32, DType::i8, DType::i64}) {
        const size_t n = 1000;
        auto x = test::random_buffer(t, n, 9);
        HostBuffer want = test::poisoned(t, n);
        oracle::block_reverse(t, 64, x.bytes, want.bytes);
        test::expect_everywhere(ops::block_reverse(t, 64), (n + 63) / 64, {x, test::poisoned(t, n)},
                                1, want);
    }
}

TEST(PackedBytes, Dp4aAndHalfBitsMatchTheOracle) {
    const size_t n = 777;
    auto a = test::random_buffer(DType::i32, n, 21), b = test::random_buffer(DType::i32, n, 22),
         c = test::random_buffer(DType::i32, n, 23);
    HostBuffer want = test::poisoned(DType::i32, n);
    for (size_t i = 0; i < n; ++i) {
        const auto ai = oracle::load<int32_t>(a.bytes, i);
        const float h = semantics::f16_to_f32(static_cast<uint16_t>(ai & 0xffff));
        oracle::store<int32_t>(
            want.bytes, i,
            static_cast<int32_t>(
                static_cast<uint32_t>(semantics::kiln_dp4a(ai, oracle::load<int32_t>(b.bytes, i),
                                                           oracle::load<int32_t>(c.bytes, i))) +
                static_cast<uint32_t>(semantics::kiln_f32_to_i32(h))));
    }
    EXPECT_EQ(semantics::kiln_dp4a(0x01ff7f80, 0x0102fe80, 5),
              5 + 1 * 1 + (-1) * 2 + 127 * (-2) + (-128) * (-128));
    test::expect_everywhere(ops::packed_bytes(64), (n + 63) / 64,
                            {a, b, c, test::poisoned(DType::i32, n)}, 3, want);
}

TEST(Comptime, UnrolledPolynomialAtEveryRowsPerThread) {
    const size_t n = 1001;
    std::vector<float> x(n), y(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) / 250.0f - 2.0f;
    oracle::comptime_poly(7, x, y);
    HostBuffer hx{DType::f32, test::Bytes(n * 4)}, want{DType::f32, test::Bytes(n * 4)};
    std::memcpy(hx.bytes.data(), x.data(), n * 4);
    std::memcpy(want.bytes.data(), y.data(), n * 4);
    for (int rpt : {1, 2, 3})
        for (int block : {32, 64})
            test::expect_everywhere(ops::comptime_poly(7, block, rpt),
                                    ops::comptime_poly_grid(n, block, rpt),
                                    {hx, test::poisoned(DType::f32, n)}, 1, want);
}

TEST(Comptime, SameIrHashesEqualAndDistinctTuplesDiffer) {
    const auto a = ops::comptime_poly(7, 64, 2), b = ops::comptime_poly(7, 64, 2);
    const auto c = ops::comptime_poly(7, 64, 3), d = ops::comptime_poly(6, 64, 2);
    EXPECT_EQ(generate_source(Backend::cpu, std::vector{a}),
              generate_source(Backend::cpu, std::vector{b}));
    EXPECT_NE(generate_source(Backend::cpu, std::vector{a}),
              generate_source(Backend::cpu, std::vector{c}));
    EXPECT_NE(generate_source(Backend::cpu, std::vector{a}),
              generate_source(Backend::cpu, std::vector{d}));
}

}  // namespace
