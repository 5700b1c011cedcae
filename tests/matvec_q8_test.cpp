// matvec_q8: every variant bit-identical to the oracle on every device, the oracle checked
// against a double-precision dequantized dot product, the quantizer, the tuner, bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "ir/hash.hpp"
#include "kiln/compile.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/semantics.hpp"
#include "oracle/matvec_q8.hpp"
#include "runtime/cuda/nvrtc.hpp"

#include "support/op_checks.hpp"

using namespace kiln;
using kiln::test::expect_compiles_for_cuda;
using kiln::test::expect_distinct_kernels;
using kiln::test::same_bits;
using kiln::test::upload_bytes;

namespace {

using Bytes = std::vector<uint8_t>;

// Random Q8_0 blocks: random quants (with -128 and 127 mixed in) and random finite f16 scales
// of moderate exponent (so products stay finite), one block with a zero scale.
Bytes random_q8(int64_t blocks, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes out(static_cast<size_t>(blocks * ops::kQ8BlockBytes));
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* block = out.data() + b * ops::kQ8BlockBytes;
        // sign, exponent 1..29 (finite, |d| up to ~2^14), random mantissa.
        const uint16_t h =
            static_cast<uint16_t>(((rng() & 1) << 15) | ((1 + rng() % 29) << 10) | (rng() & 0x3ff));
        std::memcpy(block, &h, 2);
        for (int i = 0; i < ops::kQ8BlockValues; ++i) block[2 + i] = static_cast<uint8_t>(rng());
        block[2 + (b % 32)] = 0x80;        // -128
        block[2 + ((b + 7) % 32)] = 0x7f;  // 127
    }
    if (blocks > 3) std::memset(out.data() + 3 * ops::kQ8BlockBytes, 0, 2);  // a zero scale
    return out;
}

std::vector<float> download(const Buffer& b) {
    return b.download<float>();
}

struct Shape {
    int64_t rows, k;
};
// Ragged: rows not a multiple of any block's rows; pair counts 1, 3, 65, 10 against 32 lanes
// times unrolls of 1 to 8. 37 rows of 65 pairs fill every block of the variants of at most 16 rows
// a block and overflow it, with every lane of every row holding pairs, so every thread works.
// 300 rows: a streamed grid's warps take several rows each on every device, and the CPU's
// blocks of 16 and 64 rows (a thread's 4 or 8 at once) are filled, the last one in part.
constexpr Shape kShapes[] = {{1, 64}, {3, 192}, {37, 4096 + 64}, {37, 640}, {9, 2048}, {300, 1088}};

TEST(MatvecQ8, EveryVariantMatchesTheOracleBitwiseOnEveryDevice) {
    // Every variant in one compile unit per device (one driver build, not one per variant).
    std::vector<ir::Kernel> kernels;
    for (const auto& v : ops::matvec_q8_variants())
        kernels.push_back(ops::matvec_q8_kernel(v.schedule));
    for (Device* d : devices()) compile_all(*d, kernels);
    uint64_t seed = 1;
    for (const Shape& s : kShapes) {
        const Bytes w = random_q8(s.rows * s.k / 32, seed++);
        const Bytes x = random_q8(s.k / 32, seed++);
        const std::vector<float> want = oracle::matvec_q8(w, x, s.rows, s.k);
        for (Device* d : devices()) {
            const Buffer wb = upload_bytes(*d, w), xb = upload_bytes(*d, x);
            for (const auto& v : ops::matvec_q8_variants()) {
                if (!ops::matvec_q8_serves(v.schedule, s.k)) continue;  // see StreamedMaxK
                SCOPED_TRACE(fmt::format("{} {} rows={} k={}", d->info().id, v.name, s.rows, s.k));
                auto r = ops::matvec_q8_bench(*d, wb, xb, s.rows, s.k, v.schedule, 1);
                EXPECT_TRUE(same_bits(download(r.output), want));
            }
        }
    }
}

TEST(MatvecQ8, QuantizedRealValuesMatchTheOracleAndTheExactDot) {
    const int64_t rows = 6, k = 256;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> wf(static_cast<size_t>(rows * k)), xf(static_cast<size_t>(k));
    for (auto& v : wf) v = nd(rng);
    for (auto& v : xf) v = nd(rng);
    const Bytes w = ops::quantize_q8_0(wf), x = ops::quantize_q8_0(xf);
    const std::vector<float> want = oracle::matvec_q8(w, x, rows, k);
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const Buffer wb = upload_bytes(*d, w), xb = upload_bytes(*d, x);
        auto r =
            ops::matvec_q8_bench(*d, wb, xb, rows, k, ops::matvec_q8_variants()[0].schedule, 1);
        EXPECT_TRUE(same_bits(download(r.output), want));
    }
    // Quantization error is small against the unquantized f32 dot product.
    for (int64_t r = 0; r < rows; ++r) {
        double dot = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
            dot += static_cast<double>(wf[static_cast<size_t>(r * k + i)]) *
                   xf[static_cast<size_t>(i)];
            mag += std::fabs(static_cast<double>(wf[static_cast<size_t>(r * k + i)]) *
                             xf[static_cast<size_t>(i)]);
        }
        EXPECT_NEAR(want[static_cast<size_t>(r)], dot, 0.02 * mag) << "row " << r;
    }
}

// The oracle against an independent dot product of the dequantized values in double.
TEST(MatvecQ8, OracleAgreesWithDequantizedDoubleDot) {
    uint64_t seed = 100;
    for (const Shape& s : kShapes) {
        const Bytes w = random_q8(s.rows * s.k / 32, seed++);
        const Bytes x = random_q8(s.k / 32, seed++);
        const std::vector<float> y = oracle::matvec_q8(w, x, s.rows, s.k);
        const std::vector<double> wd = oracle::dequantize_q8_0(w, s.rows * s.k);
        const std::vector<double> xd = oracle::dequantize_q8_0(x, s.k);
        for (int64_t r = 0; r < s.rows; ++r) {
            double dot = 0, mag = 0;
            for (int64_t i = 0; i < s.k; ++i) {
                const double p = wd[static_cast<size_t>(r * s.k + i)] * xd[static_cast<size_t>(i)];
                dot += p;
                mag += std::fabs(p);
            }
            // f32 roundings: two per block product, then about pairs/32 + 6 adds deep.
            const double tol = (static_cast<double>(s.k) / 64 + 16) * 0x1p-23 * mag + 1e-30;
            EXPECT_NEAR(y[static_cast<size_t>(r)], dot, tol)
                << "rows=" << s.rows << " k=" << s.k << " row " << r;
        }
    }
}

TEST(MatvecQ8, QuantizerFollowsQ8_0) {
    std::vector<float> v(64, 0.0f);
    for (int i = 0; i < 32; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i - 16) * 0.5f;
    v[5] = -63.5f;  // max |v| of block 0: d = 0.5
    const Bytes q = ops::quantize_q8_0(v);
    ASSERT_EQ(q.size(), 68u);
    uint16_t h;
    std::memcpy(&h, q.data(), 2);
    EXPECT_EQ(semantics::f16_to_f32(h), 0.5f);
    EXPECT_EQ(static_cast<int8_t>(q[2 + 5]), -127);
    EXPECT_EQ(static_cast<int8_t>(q[2 + 0]), -16);  // -8 / 0.5
    EXPECT_EQ(static_cast<int8_t>(q[2 + 31]), 15);  // 7.5 / 0.5
    std::memcpy(&h, q.data() + 34, 2);              // block 1 is all zeros: d = 0, q = 0
    EXPECT_EQ(h, 0);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(q[36 + static_cast<size_t>(i)], 0);
    // Round to nearest: 1.26 / (1.27/127) = 126, 0.0049 / 0.01 rounds to 0, 0.005 / 0.01 to 1.
    std::vector<float> u(32, 0.0f);
    u[0] = 1.27f;
    u[1] = 1.26f;
    u[2] = -0.0151f;
    const Bytes p = ops::quantize_q8_0(u);
    EXPECT_EQ(static_cast<int8_t>(p[2]), 127);
    EXPECT_EQ(static_cast<int8_t>(p[3]), 126);
    EXPECT_EQ(static_cast<int8_t>(p[4]), -2);
    EXPECT_THROW(ops::quantize_q8_0(std::vector<float>(33)), Error);
}

TEST(MatvecQ8, VariantsAreDistinctKernels) {
    expect_distinct_kernels(
        ops::matvec_q8_variants(), [](const auto& v) { return v.name; },
        [](const auto& v) { return ops::matvec_q8_kernel(v.schedule); });
    std::set<std::string> names;
    for (const auto& v : ops::matvec_q8_variants()) names.insert(v.name);
    for (const char* n : {"b64_v1", "b64_v4", "b128_v2", "b256_v8"})
        EXPECT_TRUE(names.count(n)) << n;
}

TEST(MatvecQ8, TunedEntryPointRecordsAWinnerThenHits) {
    const auto root =
        std::filesystem::temp_directory_path() /
        fmt::format("kiln_matvec_q8_tune_{}", ::testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root);
    Tuner tuner(root);
    Device& cpu = cpu_device();
    const int64_t rows = 7, k = 128;
    const Bytes w = random_q8(rows * k / 32, 55), x = random_q8(k / 32, 56);
    const std::vector<float> want = oracle::matvec_q8(w, x, rows, k);
    const Buffer wb = upload_bytes(cpu, w), xb = upload_bytes(cpu, x);
    EXPECT_TRUE(same_bits(download(ops::matvec_q8(cpu, wb, xb, rows, k, tuner)), want));
    auto c1 = tuner.counters();
    EXPECT_EQ(c1.misses, 1u);
    EXPECT_EQ(c1.benched, ops::matvec_q8_variants().size());
    const auto entries = tuner.entries(cpu.info().id);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].op, "matvec_q8");
    EXPECT_EQ(entries[0].key.rfind("rows=7,k=128#", 0), 0u) << entries[0].key;
    bool offered = false;
    for (const auto& v : ops::matvec_q8_variants()) offered |= entries[0].winner == v.name;
    EXPECT_TRUE(offered) << entries[0].winner;
    EXPECT_TRUE(same_bits(download(ops::matvec_q8(cpu, wb, xb, rows, k, tuner)), want));
    auto c2 = tuner.counters();
    EXPECT_EQ(c2.hits, 1u);
    EXPECT_EQ(c2.benched, c1.benched);  // the hit benched nothing
    std::filesystem::remove_all(root);
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
    try {
        f();
        ADD_FAILURE() << "no kiln::Error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("matvec_q8"), std::string::npos) << what;
        EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
}

TEST(MatvecQ8, BadArgumentsAreErrors) {
    Device& cpu = cpu_device();
    const ops::MatvecSchedule s;
    const Buffer w = upload_bytes(cpu, random_q8(4 * 2, 1)), x = upload_bytes(cpu, random_q8(2, 2));
    expect_error([&] { ops::matvec_q8_bench(cpu, w, x, 4, 100, s, 1); }, "k = 100");
    expect_error([&] { ops::matvec_q8_bench(cpu, w, x, 4, 32, s, 1); }, "multiple of 64");
    expect_error([&] { ops::matvec_q8_bench(cpu, w, x, 0, 64, s, 1); }, "rows = 0");
    expect_error([&] { ops::matvec_q8_bench(cpu, w, x, 5, 64, s, 1); }, "w has 272 bytes");
    expect_error([&] { ops::matvec_q8_bench(cpu, w, x, 2, 128, s, 1); }, "x has 68 bytes");
    const Buffer f(cpu, DType::f32, 17);
    expect_error([&] { ops::matvec_q8_bench(cpu, w, f, 4, 64, s, 1); }, "expected u8");
    expect_error([&] { ops::matvec_q8_kernel({64, 64, 1}); }, "threads per row 64");
    expect_error([&] { ops::matvec_q8_kernel({64, 32, 17}); }, "unroll 17");
    expect_error(
        [&] {
            ops::matvec_q8_kernel({64, 8, 1, ops::MatvecForm::warp_words});
        },
        "warp_words with 8 threads per row");
    expect_error(
        [&] {
            ops::matvec_q8_kernel({256, 32, 2, ops::MatvecForm::warp_words});
        },
        "needs 69632 bytes of shared memory");
    expect_error(
        [&] {
            ops::matvec_q8_kernel({128, 32, 1, ops::MatvecForm::staged, 2});
        },
        "staged schedule with 2 rows per warp");
    expect_error(
        [&] {
            ops::matvec_q8_kernel({256, 32, 1, ops::MatvecForm::streamed});
        },
        "streamed schedule with 0 blocks per compute unit and max_k 0");
    expect_error(
        [&] {
            ops::matvec_q8_kernel({128, 32, 1, ops::MatvecForm::staged, 1, 2, 4096});
        },
        "staged schedule with 2 blocks per compute unit and max_k 4096");
    expect_error(
        [&] {
            ops::matvec_q8_kernel({128, 32, 1, ops::MatvecForm::staged, 1, 0, 0, false, 33});
        },
        "schedule min_blocks 33; expected 0 to 32");
    EXPECT_THROW(oracle::matvec_q8(Bytes(68), Bytes(68), 1, 96), Error);
}

// A streamed schedule's x tile holds k <= max_k: a larger k is a launch error naming the bound,
// and the tuned op does not offer that variant (it still runs the others, bit-exactly).
TEST(MatvecQ8, StreamedMaxK) {
    Device& cpu = cpu_device();
    const ops::MatvecSchedule s{256, 32, 1, ops::MatvecForm::streamed, 1, 1, 128};
    EXPECT_TRUE(ops::matvec_q8_serves(s, 128));
    EXPECT_FALSE(ops::matvec_q8_serves(s, 192));
    const int64_t rows = 3, k = 192;
    const Bytes w = random_q8(rows * k / 32, 9), x = random_q8(k / 32, 10);
    const Buffer wb = upload_bytes(cpu, w), xb = upload_bytes(cpu, x);
    try {
        ops::matvec_q8_bench(cpu, wb, xb, rows, k, s, 1);
        ADD_FAILURE() << "no kiln::Error for k above max_k";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("k <= 128"), std::string::npos) << e.what();
    }
    const ops::MatvecSchedule fits{256, 32, 1, ops::MatvecForm::streamed, 1, 1, 192};
    EXPECT_TRUE(same_bits(download(ops::matvec_q8_bench(cpu, wb, xb, rows, k, fits, 1).output),
                          oracle::matvec_q8(w, x, rows, k)));
    // A miss benches every variant offered: here all but those whose max_k is below 8192.
    size_t serving = 0;
    for (const auto& v : ops::matvec_q8_variants())
        serving += ops::matvec_q8_serves(v.schedule, 8192) ? 1 : 0;
    const auto root =
        std::filesystem::temp_directory_path() /
        fmt::format("kiln_matvec_q8_maxk_{}", ::testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root);
    Tuner tuner(root);
    const Bytes w2 = random_q8(2 * 8192 / 32, 11), x2 = random_q8(8192 / 32, 12);
    const Buffer w2b = upload_bytes(cpu, w2), x2b = upload_bytes(cpu, x2);
    EXPECT_TRUE(same_bits(download(ops::matvec_q8(cpu, w2b, x2b, 2, 8192, tuner)),
                          oracle::matvec_q8(w2, x2, 2, 8192)));
    EXPECT_EQ(tuner.counters().benched, serving);
    std::filesystem::remove_all(root);
    EXPECT_LT(serving, ops::matvec_q8_variants().size());
}

TEST(MatvecQ8, EveryVariantCompilesWithNvrtcForSm90AndUsesDp4a) {
    std::vector<ir::Kernel> kernels;
    for (const auto& v : ops::matvec_q8_variants())
        kernels.push_back(ops::matvec_q8_kernel(v.schedule));
    const std::string source = generate_source(Backend::cuda, kernels);
    EXPECT_NE(source.find("__dp4a("), std::string::npos);
    EXPECT_NE(source.find("__shfl_xor_sync"), std::string::npos);  // warp folds shuffle
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    const std::vector<uint8_t> cubin = expect_compiles_for_cuda(kernels);
    ASSERT_GE(cubin.size(), 4u);
    EXPECT_EQ(cubin[0], 0x7f);
}

}  // namespace
