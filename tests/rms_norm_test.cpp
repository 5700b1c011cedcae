// rms_norm: every variant bitwise equal to the oracle on every device, for f32, f16 and bf16 at
// ragged shapes; the oracle against a double-precision reference; the tuned entry point; argument
// errors; every variant's CUDA C compiled by NVRTC for sm_90.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>
#include <random>
#include <set>

#include "ir/hash.hpp"
#include "ir/print.hpp"
#include "kiln/compile.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "kiln/semantics.hpp"
#include "oracle/rms_norm.hpp"
#include "oracle/scalar.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/everywhere.hpp"
#include "support/op_checks.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::expect_compiles_for_cuda;
using kiln::test::expect_distinct_kernels;
using kiln::test::HostBuffer;
using ::testing::HasSubstr;

namespace {

struct Shape {
    int64_t rows, n;
};

// Every dtype fills and overflows every block: 300 rows fill the largest thread-per-row block
// (b256_r1: 256 rows) and leave a partial one, and n = 4099 gives each of the fold's 256 lanes
// elements (every thread of a block-per-row variant works). Rows are ragged against every
// schedule, n against the fold's lanes (and one n is a multiple). Each n compiles every variant
// on every device, so f16 and bf16 take fewer extents than f32, and off the CPU f32 takes only
// the extents of kOffCpuExtents (PoCL compiles each kernel for about a second).
std::vector<Shape> shapes_for(DType type) {
    if (type == DType::f32)
        return {{129, 1},    {37, 7},   {3, 100},  {300, 100},
                {129, 1000}, {1, 4099}, {5, 4099}, {3, 512}};
    return {{300, 100}, {1, 100}, {5, 4099}, {2, 4099}};
}
constexpr int64_t kOffCpuExtents[] = {100, 1000, 4099};

bool runs_on(const Device& d, DType type, int64_t n) {
    return d.info().backend == Backend::cpu || type != DType::f32 ||
           std::find(std::begin(kOffCpuExtents), std::end(kOffCpuExtents), n) !=
               std::end(kOffCpuExtents);
}

uint16_t to_storage16(DType t, float f) {
    return t == DType::f16 ? semantics::f32_to_f16(f) : semantics::f32_to_bf16(f);
}

// Values in [-lo, hi) stored as `type`, with zeros and tiny and large magnitudes mixed in.
HostBuffer values(DType type, size_t count, uint32_t seed, float scale = 3.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    HostBuffer b{type, test::Bytes(count * size_of(type))};
    for (size_t i = 0; i < count; ++i) {
        float f = dist(rng);
        if (i % 97 == 5) f = 0.0f;
        if (i % 89 == 7) f *= 1e-4f;
        if (i % 83 == 11) f *= 100.0f;
        if (type == DType::f32)
            std::memcpy(&b.bytes[i * 4], &f, 4);
        else {
            const uint16_t h = to_storage16(type, f);
            std::memcpy(&b.bytes[i * 2], &h, 2);
        }
    }
    return b;
}

HostBuffer oracle_out(DType type, int64_t n, float eps, const HostBuffer& x, const HostBuffer& w) {
    HostBuffer out = test::poisoned(type, x.count());
    oracle::rms_norm(type, n, eps, x.bytes, w.bytes, out.bytes);
    return out;
}

// Builds every variant's kernel for every n of kShapes and compiles them on each device in one
// compiler run (the per-launch compile() calls then hit the memory cache).
std::vector<ir::Kernel> every_kernel(DType type, const std::vector<int64_t>& ns) {
    std::vector<ir::Kernel> ks;
    for (int64_t n : ns)
        for (const auto& s : ops::rms_norm_variants())
            ks.push_back(ops::rms_norm_kernel(type, n, s));
    return ks;
}

class RmsNormVariants : public ::testing::TestWithParam<DType> {};

TEST_P(RmsNormVariants, EveryVariantMatchesTheOracleOnEveryDevice) {
    const DType type = GetParam();
    const auto shapes = shapes_for(type);
    // Each device's kernels in one compiler run, the devices in parallel.
    std::vector<std::future<void>> compiles;
    for (Device* d : devices()) {
        std::vector<int64_t> ns;
        for (const auto& s : shapes)
            if (runs_on(*d, type, s.n) && std::find(ns.begin(), ns.end(), s.n) == ns.end())
                ns.push_back(s.n);
        compiles.push_back(std::async(std::launch::async,
                                      [d, type, ns] { compile_all(*d, every_kernel(type, ns)); }));
    }
    for (auto& c : compiles) c.get();
    const float eps = 1e-5f;
    for (const auto& [rows, n] : shapes) {
        SCOPED_TRACE(fmt::format("rows = {}, n = {}, {}", rows, n, name(type)));
        const auto x = values(type, static_cast<size_t>(rows * n), static_cast<uint32_t>(rows + n));
        const auto w = values(type, static_cast<size_t>(n), static_cast<uint32_t>(n), 2.0f);
        const HostBuffer want = oracle_out(type, n, eps, x, w);
        for (const auto& s : ops::rms_norm_variants()) {
            const ir::Kernel kernel = ops::rms_norm_kernel(type, n, s);
            for (Device* d : devices()) {
                if (!runs_on(*d, type, n)) continue;
                SCOPED_TRACE(d->info().id + " " + s.name);
                const auto out = test::run_on(*d, kernel, ops::rms_norm_grid(rows, s),
                                              {x, w, test::poisoned(type, x.count())}, {Arg(eps)});
                EXPECT_TRUE(test::identical(out.at(2), want));
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(StorageTypes, RmsNormVariants,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(RmsNormVariants, ZeroRowsAndEpsZeroAgreeEverywhere) {
    // A row of zeros: with eps > 0 it normalizes to zeros; with eps = 0 it is 0 * inf = NaN.
    const int64_t rows = 3, n = 100;  // kernels the f32 case compiled already
    auto x = values(DType::f32, rows * n, 4);
    std::fill(x.bytes.begin() + n * 4, x.bytes.begin() + 2 * n * 4, uint8_t{0});
    const auto w = values(DType::f32, n, 5);
    for (float eps : {0.0f, 1e-6f}) {
        const HostBuffer want = oracle_out(DType::f32, n, eps, x, w);
        const float mid = oracle::load<float>(want.bytes, static_cast<size_t>(n + 3));
        if (eps == 0.0f)
            EXPECT_TRUE(std::isnan(mid));
        else
            EXPECT_EQ(std::fabs(mid), 0.0f);
        for (const char* v : {"b64_r2", "warp_b128", "block_b256_u4"}) {
            const auto& s = ops::rms_norm_variant(v);
            test::expect_everywhere(
                ops::rms_norm_kernel(DType::f32, n, s), ops::rms_norm_grid(rows, s),
                {x, w, test::poisoned(DType::f32, x.count())}, 2, want, {Arg(eps)});
        }
    }
}

TEST(RmsNormVariants, RelayedLanesMatchTheOracleOnLongRows) {
    // n = 16700: 66 elements a lane, so block_b512_rw2's threads would hold 33, over the 32 it
    // keeps in registers: it runs as a plain block per row, both thread groups folding the row
    // and the first storing it. (Its ragged runs in registers are n = 4099's: 9 and 8.)
    const int64_t rows = 3, n = 16700;
    const auto x = values(DType::f32, rows * n, 6);
    const auto w = values(DType::f32, n, 7, 2.0f);
    const float eps = 1e-5f;
    const HostBuffer want = oracle_out(DType::f32, n, eps, x, w);
    int relayed = 0;
    for (const auto& s : ops::rms_norm_variants()) {
        if (s.lane_threads == 1) continue;
        ++relayed;
        SCOPED_TRACE(s.name);
        test::expect_everywhere(ops::rms_norm_kernel(DType::f32, n, s), ops::rms_norm_grid(rows, s),
                                {x, w, test::poisoned(DType::f32, x.count())}, 2, want, {Arg(eps)});
    }
    EXPECT_GE(relayed, 1);
}

TEST(RmsNormVariants, VectorLanesFallBackToAPlainFoldWhereTheyCannotRun) {
    // Vector lanes need f32, n a multiple of the lanes and at most 64 elements a thread; else the
    // variant builds exactly the plain fold of its threads (whose bits the oracle test checks at
    // n = 4099, 7 and 1; n = 1000, 512 and 100 run vectorized there, ragged against 256).
    int vector_variants = 0;
    for (const auto& s : ops::rms_norm_variants()) {
        if (s.vector_lanes == 0) continue;
        ++vector_variants;
        ops::RmsNormSchedule plain = s;
        plain.vector_lanes = 0;
        plain.prefetch_w = s.prefetch_w && s.block == s.threads;
        auto hash = [](DType t, int64_t n, const ops::RmsNormSchedule& v) {
            return ir::structural_hash(ops::rms_norm_kernel(t, n, v));
        };
        // Not a multiple of the lanes; more than 64 elements a thread (16384 / 256 per lane).
        const int64_t ragged = s.vector_lanes == 2 ? 4099 : 4098, long_row = 16384;
        for (int64_t n : {ragged, long_row}) {
            SCOPED_TRACE(fmt::format("{} n = {}", s.name, n));
            EXPECT_EQ(hash(DType::f32, n, s), hash(DType::f32, n, plain));
        }
        EXPECT_EQ(hash(DType::f16, 4096, s), hash(DType::f16, 4096, plain)) << s.name;
        EXPECT_EQ(hash(DType::bf16, 4096, s), hash(DType::bf16, 4096, plain)) << s.name;
        EXPECT_NE(hash(DType::f32, 4096, s), hash(DType::f32, 4096, plain)) << s.name;
    }
    EXPECT_GE(vector_variants, 2);
}

TEST(RmsNormVariants, KeepVariantsKeepXAndTheWTheyLoadBeforeTheFold) {
    // keep_x keeps x's lines, and w's where w is loaded before the fold (prefetch_w). A w loaded
    // between the normalize pass's stores stays plain: kept loads would wait for each store.
    int kept = 0;
    for (const auto& s : ops::rms_norm_variants()) {
        SCOPED_TRACE(s.name);
        const std::string ir = ir::print(ops::rms_norm_kernel(DType::f32, 4096, s));
        EXPECT_EQ(ir.find("buffer x: f32 read keep") != std::string::npos, s.keep_x);
        EXPECT_EQ(ir.find("buffer w: f32 read keep") != std::string::npos,
                  s.keep_x && s.prefetch_w);
        kept += s.keep_x && s.prefetch_w ? 1 : 0;
    }
    EXPECT_GE(kept, 1);
    EXPECT_FALSE(ops::rms_norm_variant("vec2_b128_k").prefetch_w);
}

TEST(RmsNormOracle, KnownValues) {
    // x = [3, 4], w = [1, 2], eps = 0: ss = 25, mean = 12.5, inv = 1 / sqrt(12.5).
    const float inv = 1.0f / std::sqrt(12.5f);
    std::vector<float> x = {3, 4}, w = {1, 2}, out(2);
    auto bytes = [](const std::vector<float>& v) {
        test::Bytes b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    test::Bytes o(8);
    oracle::rms_norm(DType::f32, 2, 0.0f, bytes(x), bytes(w), o);
    std::memcpy(out.data(), o.data(), 8);
    EXPECT_EQ(out[0], (3.0f * inv) * 1.0f);
    EXPECT_EQ(out[1], (4.0f * inv) * 2.0f);
    EXPECT_NEAR(out[0], 0.848528137, 1e-6);
    // bf16 storage rounds once at the end: 2 * (2 / sqrt(4 + 0)) * 1.5 = 3 exactly.
    test::Bytes xb(2), wb(2), ob(2);
    const uint16_t two = semantics::f32_to_bf16(2.0f), w15 = semantics::f32_to_bf16(1.5f);
    std::memcpy(xb.data(), &two, 2);
    std::memcpy(wb.data(), &w15, 2);
    oracle::rms_norm(DType::bf16, 1, 0.0f, xb, wb, ob);
    uint16_t got;
    std::memcpy(&got, ob.data(), 2);
    EXPECT_EQ(semantics::bf16_to_f32(got), 1.5f);
}

TEST(RmsNormOracle, CloseToADoublePrecisionReference) {
    const int64_t rows = 7, n = 1500;
    const float eps = 0.25f;  // large enough to matter
    const auto x = values(DType::f32, rows * n, 9), w = values(DType::f32, n, 10);
    const HostBuffer got = oracle_out(DType::f32, n, eps, x, w);
    for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double v = oracle::load<float>(x.bytes, static_cast<size_t>(r * n + i));
            ss += v * v;
        }
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) {
            const double want = oracle::load<float>(x.bytes, static_cast<size_t>(r * n + i)) * inv *
                                oracle::load<float>(w.bytes, static_cast<size_t>(i));
            const double g = oracle::load<float>(got.bytes, static_cast<size_t>(r * n + i));
            ASSERT_NEAR(g, want, 1e-5 * std::fabs(want) + 1e-30) << r << ", " << i;
        }
    }
}

class RmsNormTuned : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = std::filesystem::temp_directory_path() /
                fmt::format("kiln-rms-norm-test-{}-{}", getpid(),
                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(root_);
    }
    void TearDown() override { std::filesystem::remove_all(root_); }
    std::filesystem::path root_;
};

TEST_F(RmsNormTuned, EntryPointReturnsTheOraclesBytesAndRecordsAWinner) {
    Device& cpu = cpu_device();
    Tuner tuner(root_);
    const int64_t rows = 37, n = 100;
    const float eps = 1e-6f;
    for (DType type : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(name(type));
        const auto xh = values(type, rows * n, 21), wh = values(type, n, 22);
        Buffer x(cpu, type, xh.count()), w(cpu, type, wh.count());
        x.upload_bytes(xh.bytes);
        w.upload_bytes(wh.bytes);
        const HostBuffer want = oracle_out(type, n, eps, xh, wh);
        const TuneCounters before = tuner.counters();

        Buffer first = ops::rms_norm(cpu, x, w, n, eps, tuner);
        EXPECT_TRUE(test::identical({type, first.download_bytes()}, want));
        const TuneCounters miss = tuner.counters();
        EXPECT_EQ(miss.misses, before.misses + 1);
        EXPECT_EQ(miss.benched, before.benched + ops::rms_norm_variants().size());

        const std::string key = fmt::format("rows={},n={},dtype={}", rows, n, name(type));
        bool recorded = false;
        for (const auto& e : tuner.entries(cpu.info().id))
            if (e.op == "rms_norm" && e.key.rfind(key + "#", 0) == 0) {
                recorded = true;
                EXPECT_NO_THROW(ops::rms_norm_variant(e.winner)) << e.winner;
            }
        EXPECT_TRUE(recorded) << key;

        // The second call is a hit: one launch of the winner, nothing benched.
        Buffer second = ops::rms_norm(cpu, x, w, n, eps, tuner);
        EXPECT_TRUE(test::identical({type, second.download_bytes()}, want));
        EXPECT_EQ(tuner.counters().benched, miss.benched);
        EXPECT_EQ(tuner.counters().hits, miss.hits + 1);
        auto tuned = ops::rms_norm_tuned(cpu, x, w, n, eps);
        Buffer third = tuned.run(tuner);
        EXPECT_TRUE(tuned.report().hit);
        EXPECT_EQ(tuned.report().benched, 0);
        EXPECT_TRUE(test::identical({type, third.download_bytes()}, want));
    }
}

TEST_F(RmsNormTuned, ZeroRowsReturnAnEmptyBufferWithoutTuning) {
    Device& cpu = cpu_device();
    Tuner tuner(root_);
    Buffer x(cpu, DType::f16, 0), w(cpu, DType::f16, 8);
    Buffer out = ops::rms_norm(cpu, x, w, 8, 1e-5f, tuner);
    EXPECT_EQ(out.count(), 0u);
    EXPECT_EQ(out.dtype(), DType::f16);
    EXPECT_EQ(tuner.counters().misses + tuner.counters().hits, 0u);
}

TEST_F(RmsNormTuned, EveryVariantHasItsOwnIdentity) {
    Device& cpu = cpu_device();
    Buffer x(cpu, DType::f32, 64), w(cpu, DType::f32, 32);
    x.fill(1.0);
    w.fill(1.0);
    // Same variant set twice: the same key; another n: another key.
    auto a = ops::rms_norm_tuned(cpu, x, w, 32, 1e-5f);
    auto b = ops::rms_norm_tuned(cpu, x, w, 32, 1e-5f);
    EXPECT_EQ(a.full_key(), b.full_key());
    EXPECT_THAT(a.full_key(), HasSubstr("rows=2,n=32,dtype=f32#"));
    Buffer w16(cpu, DType::f32, 16);
    EXPECT_NE(ops::rms_norm_tuned(cpu, x, w16, 16, 1e-5f).full_key(), a.full_key());
    expect_distinct_kernels(
        ops::rms_norm_variants(), [](const auto& s) { return s.name; },
        [](const auto& s) { return ops::rms_norm_kernel(DType::f32, 32, s); });
}

TEST(RmsNormErrors, BadArgumentsNameTheOpAndTheValues) {
    Device& cpu = cpu_device();
    Tuner tuner(std::filesystem::temp_directory_path() / "kiln-rms-norm-errors-unused");
    Buffer x(cpu, DType::f32, 12), w(cpu, DType::f32, 4), w3(cpu, DType::f32, 3);
    Buffer xi(cpu, DType::i32, 12), wh(cpu, DType::f16, 4), x5(cpu, DType::f32, 10);
    auto run = [&](const Buffer& a, const Buffer& b, int64_t n, float eps) {
        return error_of([&] { ops::rms_norm(cpu, a, b, n, eps, tuner); });
    };
    EXPECT_THAT(run(x, w, 0, 1e-5f), HasSubstr("rms_norm: n = 0; expected"));
    EXPECT_THAT(run(x, w, -4, 1e-5f), HasSubstr("n = -4"));
    EXPECT_THAT(run(x5, w, 4, 1e-5f),
                HasSubstr("x has 10 elements, not a whole number of rows of n = 4"));
    EXPECT_THAT(run(x, w3, 4, 1e-5f), HasSubstr("w has 3 elements; expected n = 4"));
    EXPECT_THAT(run(x, wh, 4, 1e-5f), HasSubstr("w is f16 but x is f32"));
    EXPECT_THAT(run(xi, w, 4, 1e-5f), HasSubstr("x is i32; expected f32, f16 or bf16"));
    EXPECT_THAT(run(x, w, 4, -1.0f), HasSubstr("eps = -1; expected a finite value >= 0"));
    EXPECT_THAT(run(x, w, 4, std::nanf("")), HasSubstr("eps = nan"));
    EXPECT_THAT(run(x, w, 4, INFINITY), HasSubstr("eps = inf"));
    EXPECT_THAT(error_of([] { ops::rms_norm_variant("b32_r9"); }),
                HasSubstr("no variant named 'b32_r9'; the variants are b64_r1, "));
    EXPECT_THAT(error_of([] { ops::rms_norm_kernel(DType::i8, 4, ops::rms_norm_variants()[0]); }),
                HasSubstr("rms_norm: dtype i8"));
    ops::RmsNormSchedule relay = ops::rms_norm_variant("block_b512_rw2");
    relay.lane_threads = 4;
    EXPECT_THAT(error_of([&] { ops::rms_norm_kernel(DType::f32, 4, relay); }),
                HasSubstr("4 threads per lane; expected 1 or 2"));
    relay.lane_threads = 2;
    relay.row_in_registers = false;
    EXPECT_THAT(error_of([&] { ops::rms_norm_kernel(DType::f32, 4, relay); }),
                HasSubstr("2 threads per lane needs the row in registers and 256 threads"));
    relay.row_in_registers = true;
    relay.block = 256;
    EXPECT_THAT(error_of([&] { ops::rms_norm_kernel(DType::f32, 4, relay); }),
                HasSubstr("needs a block per row and one row per thread"));
    ops::RmsNormSchedule vector = ops::rms_norm_variant("vec2_b128");
    vector.vector_lanes = 3;
    EXPECT_THAT(error_of([&] { ops::rms_norm_kernel(DType::f32, 4, vector); }),
                HasSubstr("3 vector lanes; expected 0 (off), 2 or 4"));
    vector.vector_lanes = 4;  // 128 threads per row: 2 lanes each, not 4
    EXPECT_THAT(error_of([&] { ops::rms_norm_kernel(DType::f32, 4, vector); }),
                HasSubstr("4 vector lanes need 64 threads per row"));
    EXPECT_THAT(error_of([&] {
                    ops::rms_norm_bench(cpu, x, w, 2, 4, 1e-5f, ops::rms_norm_variants()[0], 1);
                }),
                HasSubstr("2 rows of n = 4 but x has 12 elements"));
    EXPECT_FALSE(std::filesystem::exists(tuner.root()));  // nothing was tuned
}

TEST(RmsNormErrors, TheKernelChecksItsLaunchContract) {
    Device& cpu = cpu_device();
    const auto& s = ops::rms_norm_variant("warp_b128");
    auto kernel = compile(cpu, ops::rms_norm_kernel(DType::f32, 4, s));
    Buffer x(cpu, DType::f32, 12), w(cpu, DType::f32, 4), w3(cpu, DType::f32, 3),
        out(cpu, DType::f32, 12), out8(cpu, DType::f32, 8), x6(cpu, DType::f32, 6);
    EXPECT_NO_THROW(kernel->launch(1, {x, w, out, 1e-5f}));
    EXPECT_THAT(error_of([&] {
                    kernel->launch(1, {x, w3, out, 1e-5f});
                }),
                HasSubstr("w holds n = 4 elements"));
    EXPECT_THAT(error_of([&] {
                    kernel->launch(1, {x, w, out8, 1e-5f});
                }),
                HasSubstr("out is as long as x"));
    EXPECT_THAT(error_of([&] {
                    kernel->launch(1, {x6, w, Buffer(cpu, DType::f32, 6), 1e-5f});
                }),
                HasSubstr("x holds one or more rows of 4"));
    EXPECT_THAT(error_of([&] {
                    kernel->launch(1, {x, w, out, -1.0f});
                }),
                HasSubstr("eps is finite and >= 0"));
}

TEST(RmsNormCuda, EveryVariantCompilesWithNvrtcForSm90) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    std::vector<ir::Kernel> ks;
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
        auto more = t == DType::f32 ? every_kernel(t, {4096, 4099}) : every_kernel(t, {4099});
        ks.insert(ks.end(), more.begin(), more.end());
    }
    const std::vector<uint8_t> cubin = expect_compiles_for_cuda(ks);
    ASSERT_GE(cubin.size(), 4u);
    EXPECT_EQ(cubin[1], 'E');
}

TEST(RmsNormCuda, GpuVariantsKeepTheirLanesInRegisters) {
    // Warp-per-row folds shuffle (no barrier); block-per-row folds go through shared memory;
    // neither spills the fold's lanes into a per-thread array.
    for (const auto& s : ops::rms_norm_variants()) {
        if (s.threads == 1) continue;
        SCOPED_TRACE(s.name);
        const std::string src =
            generate_source(Backend::cuda, std::vector{ops::rms_norm_kernel(DType::f32, 4096, s)});
        const auto body = src.substr(src.find("__global__"));
        EXPECT_EQ(body.find(" la0["), std::string::npos);
        if (s.threads == 32) {
            EXPECT_NE(body.find("__shfl_xor_sync"), std::string::npos);
            EXPECT_EQ(body.find("__syncthreads"), std::string::npos);
        } else {
            EXPECT_NE(body.find("__syncthreads"), std::string::npos);
        }
    }
}

}  // namespace
