// matvec_kquant (Q4_K, Q6_K): every variant bit-identical to the oracle on every device, the
// oracle checked against a double-precision dot product of the dequantized values, the tuner,
// bad arguments; the full tier on a real Gemma 3 tensor of each format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "kiln/compile.hpp"
#include "kiln/gguf.hpp"
#include "kiln/ops/matvec_kquant.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "oracle/matvec_kquant.hpp"
#include "oracle/matvec_q8.hpp"
#include "oracle/quant_blocks.hpp"

#include "support/errors.hpp"
#include "support/everywhere.hpp"
#include "support/op_checks.hpp"

using namespace kiln;
using kiln::test::same_bits;
using kiln::test::upload_bytes;
using ops::KQuant;

namespace {

using Bytes = std::vector<uint8_t>;

// A random finite f16 of moderate size: sign, exponent 2^-14 .. 2^-1, random mantissa.
uint16_t random_half(std::mt19937_64& rng, bool positive) {
    const uint64_t sign = positive ? 0 : (rng() & 1);
    return static_cast<uint16_t>((sign << 15) | ((1 + rng() % 14) << 10) | (rng() & 0x3ff));
}

void put_half(uint8_t* at, uint16_t h) {
    std::memcpy(at, &h, 2);
}

// Random super-blocks: random quants, scales and mins (every bit pattern the formats hold), f16
// scales as above. One super-block's quants all at the extremes (Q6_K: q = -32 with scale -128).
Bytes random_w(KQuant f, int64_t supers, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int bytes = f == KQuant::q4_k ? ops::kQ4KBlockBytes : ops::kQ6KBlockBytes;
    Bytes out(static_cast<size_t>(supers * bytes));
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    for (int64_t s = 0; s < supers; ++s) {
        uint8_t* b = out.data() + s * bytes;
        if (f == KQuant::q4_k) {
            put_half(b, random_half(rng, true));  // llama.cpp's d and dmin are non-negative
            put_half(b + 2, random_half(rng, true));
        } else {
            put_half(b + 208, random_half(rng, false));
        }
    }
    if (supers > 2 && f == KQuant::q6_k) {
        std::memset(out.data() + 2 * bytes, 0, 192);          // q = 0 - 32
        std::memset(out.data() + 2 * bytes + 192, 0x80, 16);  // scales -128
    }
    if (supers > 2 && f == KQuant::q4_k) std::memset(out.data() + 2 * bytes + 16, 0xff, 128);
    return out;
}

// Random Q8_0 x: random quants with -128 and 127 mixed in, f16 scales as above.
Bytes random_x(int64_t k, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes out(static_cast<size_t>(k / 32 * ops::kQ8BlockBytes));
    for (int64_t b = 0; b < k / 32; ++b) {
        uint8_t* block = out.data() + b * ops::kQ8BlockBytes;
        put_half(block, random_half(rng, false));
        for (int i = 0; i < 32; ++i) block[2 + i] = static_cast<uint8_t>(rng());
        block[2 + (b % 32)] = 0x80;
        block[2 + ((b + 5) % 32)] = 0x7f;
    }
    if (k / 32 > 10) std::memset(out.data() + 10 * ops::kQ8BlockBytes + 2, 0x80, 32);
    return out;
}

oracle::QuantFormat quant_format(KQuant f) {
    return f == KQuant::q4_k ? oracle::QuantFormat::q4_k : oracle::QuantFormat::q6_k;
}

// The oracle against sum of w_i*x_i in double over the dequantized values (oracle::dequantize,
// oracle::dequantize_q8_0), within 2e-6 of the sum of |terms| (for Q4_K each term's two parts
// d_j*q and the min n_j counted apart, since the oracle rounds them apart): the oracle's f32
// steps are at most ~20 roundings deep (20 * 2^-24 = 1.2e-6; random inputs and the real
// tensors show 3.4e-8). A wrong scale, min, sub-block or value order is off by the terms' size;
// a min 1e-4 off in relative terms fails too.
void expect_oracle_near_dequantized_dot(KQuant f, const Bytes& w, const Bytes& x, int64_t rows,
                                        int64_t k) {
    const std::vector<float> y = oracle::matvec_kquant(f, w, x, rows, k);
    const std::vector<float> wd = oracle::dequantize(quant_format(f), w);
    const std::vector<double> xd = oracle::dequantize_q8_0(x, k);
    const int bytes = f == KQuant::q4_k ? ops::kQ4KBlockBytes : ops::kQ6KBlockBytes;
    for (int64_t r = 0; r < rows; ++r) {
        double dot = 0, mag = 0;
        for (int64_t s = 0; s < k / 256; ++s) {
            const uint8_t* block = w.data() + (r * k / 256 + s) * bytes;
            float mins[8] = {};
            if (f == KQuant::q4_k) {
                const oracle::Q4KBlock b = oracle::unpack_q4_k(block);
                for (int j = 0; j < 8; ++j) mins[j] = b.dmin * static_cast<float>(b.min[j]);
            }
            for (int i = 0; i < 256; ++i) {
                const double wi = wd[static_cast<size_t>(r * k + s * 256 + i)];
                const double xi = xd[static_cast<size_t>(s * 256 + i)];
                dot += wi * xi;
                mag += (std::fabs(wi) + 2 * std::fabs(mins[i / 32])) * std::fabs(xi);
            }
        }
        EXPECT_NEAR(y[static_cast<size_t>(r)], dot, 2e-6 * mag) << "row " << r;
    }
}

// Every variant's kernel for both formats, or the first variant's (`first_only`).
std::vector<ir::Kernel> kernels(bool first_only = false) {
    std::vector<ir::Kernel> out;
    for (KQuant f : {KQuant::q4_k, KQuant::q6_k})
        for (const auto& v : ops::matvec_kquant_variants()) {
            out.push_back(ops::matvec_kquant_kernel(f, v.schedule));
            if (first_only) break;
        }
    return out;
}

void expect_compiles_with_nvrtc(const std::vector<ir::Kernel>& ks) {
    std::string why;
    if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    EXPECT_GE(test::expect_compiles_for_cuda(ks).size(), 4u);
}

struct Case {
    KQuant format;
    int64_t rows, k;
};
// Ragged rows (not a multiple of any block's rows; 70 past a block of the one-thread-per-row
// variant's 64); unit counts 1, 3, 8 and 10 against 32 lanes.
constexpr Case kCases[] = {{KQuant::q4_k, 1, 256},  {KQuant::q4_k, 37, 768},
                           {KQuant::q4_k, 9, 2560}, {KQuant::q4_k, 70, 256},
                           {KQuant::q6_k, 1, 512},  {KQuant::q6_k, 37, 1536},
                           {KQuant::q6_k, 5, 4096}, {KQuant::q6_k, 70, 512}};

TEST(MatvecKquant, EveryVariantMatchesTheOracleBitwiseOnEveryDevice) {
    test::compile_together(kernels());
    uint64_t seed = 1;
    for (const Case& c : kCases) {
        const Bytes w = random_w(c.format, c.rows * c.k / 256, seed++);
        const Bytes x = random_x(c.k, seed++);
        const std::vector<float> want = oracle::matvec_kquant(c.format, w, x, c.rows, c.k);
        for (Device* d : devices()) {
            const Buffer wb = upload_bytes(*d, w), xb = upload_bytes(*d, x);
            for (const auto& v : ops::matvec_kquant_variants()) {
                SCOPED_TRACE(fmt::format("{} {} {} rows={} k={}", d->info().id,
                                         ops::kquant_name(c.format), v.name, c.rows, c.k));
                auto r = ops::matvec_kquant_bench(*d, c.format, wb, xb, c.rows, c.k, v.schedule, 1);
                EXPECT_TRUE(same_bits(r.output.download<float>(), want));
            }
        }
    }
}

TEST(MatvecKquant, OracleAgreesWithDequantizedDoubleDot) {
    uint64_t seed = 100;
    for (const Case& c : kCases) {
        SCOPED_TRACE(fmt::format("{} rows={} k={}", ops::kquant_name(c.format), c.rows, c.k));
        expect_oracle_near_dequantized_dot(c.format, random_w(c.format, c.rows * c.k / 256, seed),
                                           random_x(c.k, seed + 1), c.rows, c.k);
        seed += 2;
    }
}

TEST(MatvecKquant, VariantsAreDistinctKernelsThatUseDp4a) {
    for (KQuant f : {KQuant::q4_k, KQuant::q6_k})
        test::expect_distinct_kernels(
            ops::matvec_kquant_variants(), [](const auto& v) { return v.name; },
            [f](const auto& v) { return ops::matvec_kquant_kernel(f, v.schedule); });
    const std::string source = generate_source(Backend::cuda, kernels());
    EXPECT_NE(source.find("__dp4a("), std::string::npos);
}

// One variant of each format here (NVRTC takes seconds a kernel); every variant in the full tier.
TEST(MatvecKquant, CompilesWithNvrtcForSm90) {
    expect_compiles_with_nvrtc(kernels(/*first_only=*/true));
}

TEST(FullMatvecKquant, EveryVariantCompilesWithNvrtcForSm90) {
    expect_compiles_with_nvrtc(kernels());
}

TEST(MatvecKquant, TunedEntryPointRacesEveryVariantThenHits) {
    const auto root = std::filesystem::temp_directory_path() /
                      fmt::format("kiln_matvec_kquant_tune_{}",
                                  ::testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root);
    Tuner tuner(root);
    Device& cpu = cpu_device();
    std::vector<ir::Kernel> q6;  // compiled in one unit, before the race finds them compiled
    for (const auto& v : ops::matvec_kquant_variants())
        q6.push_back(ops::matvec_kquant_kernel(KQuant::q6_k, v.schedule));
    compile_all(cpu, q6);
    const int64_t rows = 7, k = 512;
    const Bytes w = random_w(KQuant::q6_k, rows * k / 256, 55), x = random_x(k, 56);
    const std::vector<float> want = oracle::matvec_kquant(KQuant::q6_k, w, x, rows, k);
    const Buffer wb = upload_bytes(cpu, w), xb = upload_bytes(cpu, x);
    auto run = [&] {
        return ops::matvec_kquant(cpu, KQuant::q6_k, wb, xb, rows, k, tuner).download<float>();
    };
    EXPECT_TRUE(same_bits(run(), want));
    EXPECT_EQ(tuner.counters().benched, ops::matvec_kquant_variants().size());
    const auto entries = tuner.entries(cpu.info().id);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].op, "matvec_q6_k");
    EXPECT_EQ(entries[0].key.rfind("rows=7,k=512#", 0), 0u) << entries[0].key;
    EXPECT_TRUE(same_bits(run(), want));
    EXPECT_EQ(tuner.counters().hits, 1u);
    EXPECT_EQ(tuner.counters().benched, ops::matvec_kquant_variants().size());
    std::filesystem::remove_all(root);
}

TEST(MatvecKquant, BadArgumentsAreErrors) {
    Device& cpu = cpu_device();
    const ops::MatvecKquantSchedule s;
    const Buffer w4(cpu, DType::u8, 4 * 144), w6(cpu, DType::u8, 4 * 2 * 210);
    const Buffer x(cpu, DType::u8, 512 / 32 * 34), xf(cpu, DType::f32, 272);
    auto q4 = [&](const Buffer& w, const Buffer& xb, int64_t rows, int64_t k) {
        return [&, rows, k] { ops::matvec_kquant_bench(cpu, KQuant::q4_k, w, xb, rows, k, s, 1); };
    };
    auto q6 = [&](const Buffer& w, const Buffer& xb, int64_t rows, int64_t k) {
        return [&, rows, k] { ops::matvec_kquant_bench(cpu, KQuant::q6_k, w, xb, rows, k, s, 1); };
    };
    test::expect_error_naming("matvec_q4_k", q4(w4, x, 4, 100), {"k = 100", "multiple of 256"});
    test::expect_error_naming("matvec_q6_k", q6(w6, x, 4, 256), {"k = 256", "multiple of 512"});
    test::expect_error_naming("matvec_q4_k", q4(w4, x, 0, 256), {"rows = 0", "at least 1"});
    test::expect_error_naming("matvec_q4_k", q4(w4, x, 5, 256), {"w has 576 bytes", "= 720"});
    test::expect_error_naming("matvec_q4_k", q4(w4, x, 4, 256), {"x has 544 bytes", "= 272"});
    test::expect_error_naming("matvec_q6_k", q6(w6, x, 3, 512), {"w has 1680 bytes", "= 1260"});
    test::expect_error_naming("matvec_q4_k", q4(w4, xf, 4, 256), {"dtype f32", "expected u8"});
    test::expect_error_naming("matvec_q4_k", q4(w4, x, int64_t{1} << 40, 256), {"bytes of q4_k"});
    test::expect_error_naming("matvec_kquant",
                              [] {
                                  ops::matvec_kquant_kernel(KQuant::q4_k, {64, 64, 1});
                              },
                              {"threads per row 64"});
    test::expect_error_naming("matvec_kquant",
                              [] {
                                  ops::matvec_kquant_kernel(KQuant::q4_k, {64, 32, 9});
                              },
                              {"unroll 9"});
}

// A real Gemma 3 270M weight of each format (attn_output: Q4_K, 640 x 1024; an ffn_down: Q6_K,
// 640 x 2048) against a quantized random x: every variant on every device bit-identical to the
// oracle, the oracle near the dequantized double dot.
TEST(FullMatvecKquant, RealGemmaTensorsMatchTheOracle) {
    const std::filesystem::path path = KILN_GEMMA_GGUF;
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent (scripts/setup.sh)";
    const GgufFile file(path);
    std::vector<const GgufTensorInfo*> picked;
    for (GgufType type : {GgufType::q4_k, GgufType::q6_k})
        for (const auto& t : file.tensors())
            if (t.type == type) {
                picked.push_back(&t);
                break;
            }
    ASSERT_EQ(picked.size(), 2u) << "a Q4_K and a Q6_K tensor";
    test::compile_together(kernels());
    for (const GgufTensorInfo* t : picked) {
        const KQuant f = t->type == GgufType::q4_k ? KQuant::q4_k : KQuant::q6_k;
        const int64_t k = t->dims[0], rows = t->dims[1];
        SCOPED_TRACE(fmt::format("{} {} rows={} k={}", t->name, name(t->type), rows, k));
        const Bytes w = file.tensor_bytes(t->name);
        std::mt19937 rng(3);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> xf(static_cast<size_t>(k));
        for (auto& v : xf) v = nd(rng);
        const Bytes x = ops::quantize_q8_0(xf);
        const std::vector<float> want = oracle::matvec_kquant(f, w, x, rows, k);
        expect_oracle_near_dequantized_dot(f, w, x, rows, k);
        for (Device* d : devices()) {
            const Buffer wb = upload_bytes(*d, w), xb = upload_bytes(*d, x);
            for (const auto& v : ops::matvec_kquant_variants()) {
                SCOPED_TRACE(fmt::format("{} {}", d->info().id, v.name));
                auto r = ops::matvec_kquant_bench(*d, f, wb, xb, rows, k, v.schedule, 1);
                EXPECT_TRUE(same_bits(r.output.download<float>(), want));
            }
        }
    }
}

}  // namespace
