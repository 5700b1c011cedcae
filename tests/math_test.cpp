// kiln's transcendental functions (include/kiln/math.hpp): error bounds against long double
// references over the whole f32 range, exact special values, bit-identity across devices, the
// f16/bf16 and dtype rules, and CUDA C that NVRTC accepts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/math.hpp"
#include "kiln/semantics.hpp"
#include "runtime/cuda/nvrtc.hpp"
#include "support/errors.hpp"
#include "support/ulp.hpp"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Expr;
using kiln::test::from_bits;
using kiln::test::same_bits;
using kiln::test::to_bits;
using kiln::test::ulp_error;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Function {
    const char* name;
    Expr (*build)(const Expr&);
    long double (*reference)(long double);
    double max_ulp;  // the bound stated in math.hpp
};

const std::vector<Function>& functions() {
    static const std::vector<Function> fs = {
        {"exp", kiln::exp, [](long double x) { return std::exp(x); }, 1.0},
        {"exp2", kiln::exp2, [](long double x) { return std::exp2(x); }, 1.0},
        {"expm1", kiln::expm1, [](long double x) { return std::expm1(x); }, 1.5},
        {"log", kiln::log, [](long double x) { return std::log(x); }, 1.0},
        {"log2", kiln::log2, [](long double x) { return std::log2(x); }, 1.0},
        {"log1p", kiln::log1p, [](long double x) { return std::log1p(x); }, 1.0},
        {"tanh", kiln::tanh, [](long double x) { return std::tanh(x); }, 2.0},
        {"sigmoid", kiln::sigmoid, [](long double x) { return 1.0L / (1.0L + std::exp(-x)); }, 2.0},
        {"erf", kiln::erf, [](long double x) { return std::erf(x); }, 1.0},
        {"rsqrt", kiln::rsqrt, [](long double x) { return 1.0L / std::sqrt(x); }, 0.5},
        {"sin", kiln::sin, [](long double x) { return std::sin(x); }, 1.0},
        {"cos", kiln::cos, [](long double x) { return std::cos(x); }, 1.0},
        {"floor", kiln::floor, [](long double x) { return std::floor(x); }, 0.0},
        {"ceil", kiln::ceil, [](long double x) { return std::ceil(x); }, 0.0},
        {"trunc", kiln::trunc, [](long double x) { return std::trunc(x); }, 0.0},
        {"round", kiln::round, [](long double x) { return std::nearbyint(x); }, 0.0},
    };
    return fs;
}

size_t index_of(const std::string& name) {
    for (size_t i = 0; i < functions().size(); ++i)
        if (functions()[i].name == name) return i;
    throw kiln::Error("no function " + name);
}

// y[i] = f(x[i]) over f32 buffers.
kiln::ir::Kernel unary_kernel(const std::string& name, Expr (*f)(const Expr&),
                              DType type = DType::f32) {
    kiln::KernelBuilder k("math_" + name, 64);
    auto x = k.input("x", type);
    auto y = k.output("y", type);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = f(x[i]); });
    return k.finish();
}

std::vector<kiln::ir::Kernel> all_kernels() {
    std::vector<kiln::ir::Kernel> ks;
    for (const Function& f : functions()) ks.push_back(unary_kernel(f.name, f.build));
    return ks;
}

std::vector<float> run(const kiln::CompiledKernel& kernel, const std::vector<float>& in) {
    Device& d = kernel.device();
    kiln::Buffer bx(d, DType::f32, in.size()), by(d, DType::f32, in.size());
    bx.upload(in);
    kernel.launch(static_cast<int64_t>((in.size() + 63) / 64), {bx, by});
    return by.download<float>();
}

// Inputs over the whole f32 range: special values, every binade's edges (both signs, a few ulp
// either side of each power of two), and random bit patterns (a quarter anywhere, the rest with
// exponents in [2^-30, 2^8), where the functions are not constant).
std::vector<float> inputs(size_t random_count, uint32_t seed) {
    std::vector<float> v = {0.0f,
                            -0.0f,
                            kInf,
                            -kInf,
                            kNaN,
                            -kNaN,
                            from_bits(0x7f800001u),
                            from_bits(1),
                            from_bits(0x80000001u),
                            from_bits(0x007fffffu),
                            from_bits(0x00800000u),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            1.0f,
                            -1.0f,
                            0.5f,
                            2.0f};
    // Thresholds (exp/expm1/sigmoid overflow and underflow, tanh and erf saturation), +-8 ulp.
    for (float t : {88.7228394f, 88.7228317f, -103.972077f, -87.3365479f, -150.0f, 128.0f, -149.0f,
                    9.01f, 3.92f, 1.0f, 0x1p-25f, 0x1p-24f, 0.2929f, 0.4142f, 0.35f, -1.0f, -17.33f,
                    0.707106769f, 1.41421354f}) {
        for (int d = -8; d <= 8; ++d) {
            v.push_back(from_bits(to_bits(t) + static_cast<uint32_t>(d)));
            v.push_back(-from_bits(to_bits(t) + static_cast<uint32_t>(d)));
        }
    }
    // Near multiples of pi/2, where sin and cos reduce their argument with the most cancellation.
    for (int i = 0; i < 216; ++i) {
        const long double k = std::floor(std::pow(1.5L, i));
        const float x = static_cast<float>(k * 1.5707963267948966192313216916397514L);
        for (int d = -2; d <= 2; ++d) {
            v.push_back(from_bits(to_bits(x) + static_cast<uint32_t>(d)));
            v.push_back(-from_bits(to_bits(x) + static_cast<uint32_t>(d)));
        }
    }
    for (uint32_t e = 0; e < 255; ++e) {
        for (int d = -3; d <= 3; ++d) {
            const uint32_t b = (e << 23) + static_cast<uint32_t>(d);
            if (b > 0x7f800000u) continue;
            v.push_back(from_bits(b));
            v.push_back(from_bits(b | 0x80000000u));
        }
    }
    std::mt19937 rng(seed);
    for (size_t i = 0; i < random_count; ++i) {
        uint32_t b = rng();
        if (i % 4 != 0) b = (b & 0x807fffffu) | ((97u + b % 36u) << 23);  // 2^-30 .. 2^8
        v.push_back(from_bits(b));
    }
    return v;
}

// The CPU device's compiled kernels, compiled once for the whole file.
Device& cpu_device() {
    for (Device* d : kiln::devices())
        if (d->info().backend == kiln::Backend::cpu) return *d;
    throw kiln::Error("no CPU device");
}
const std::vector<std::shared_ptr<kiln::CompiledKernel>>& cpu_kernels() {
    static const auto ks = [] {
        const auto kernels = all_kernels();
        return kiln::compile_all(cpu_device(), kernels);
    }();
    return ks;
}

TEST(Math, ErrorBoundsOverTheWholeRange) {
    const std::vector<float> in = inputs(1 << 20, 1234);
    for (size_t fi = 0; fi < functions().size(); ++fi) {
        const Function& f = functions()[fi];
        const std::vector<float> out = run(*cpu_kernels()[fi], in);
        double worst = 0;
        float worst_x = 0;
        for (size_t i = 0; i < in.size(); ++i) {
            const double err = ulp_error(out[i], f.reference(in[i]));
            if (!(err <= worst)) {
                worst = err;
                worst_x = in[i];
            }
        }
        EXPECT_LE(worst, f.max_ulp)
            << f.name << " at x = " << worst_x << " (" << std::hexfloat << worst_x << ")";
        std::printf("%-8s max error %.3f ulp at %a\n", f.name, worst, worst_x);
    }
}

// rsqrt scales every positive input exactly into [1, 4) and the result back exactly, so these
// 2^24 inputs decide its error everywhere: it is correctly rounded.
TEST(Math, RsqrtIsCorrectlyRoundedOverItsWholeReducedRange) {
    std::vector<float> in;
    for (uint32_t b = 0x3f800000u; b < 0x40800000u; ++b) in.push_back(from_bits(b));
    const std::vector<float> out = run(*cpu_kernels()[index_of("rsqrt")], in);
    size_t wrong = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const float want = static_cast<float>(1.0L / std::sqrt(static_cast<long double>(in[i])));
        if (!same_bits(out[i], want) && ++wrong <= 5)
            ADD_FAILURE() << "rsqrt(" << std::hexfloat << in[i] << ") = " << out[i] << ", want "
                          << want;
    }
    EXPECT_EQ(wrong, 0u);
}

struct Special {
    const char* fn;
    float x;
    float y;
};

TEST(Math, SpecialValuesExactly) {
    const float tiny = from_bits(1);  // the smallest subnormal
    const float max = std::numeric_limits<float>::max();
    const std::vector<Special> cases = {
        {"exp", 0.0f, 1.0f},
        {"exp", -0.0f, 1.0f},
        {"exp", kInf, kInf},
        {"exp", -kInf, 0.0f},
        {"exp", kNaN, kNaN},
        {"exp", 88.7228317f, 0x1.ffff08p+127f},  // the last finite result
        {"exp", 88.7228394f, kInf},              // the first overflow
        {"exp", max, kInf},
        {"exp", -103.278931f, tiny},  // e^x = 2^-149 (rounded)
        {"exp", -103.972069f, tiny},  // just above the half-way point to 0
        {"exp", -103.972084f, 0.0f},  // just below it
        {"exp", -max, 0.0f},
        {"exp", tiny, 1.0f},
        {"exp2", 0.0f, 1.0f},
        {"exp2", -149.0f, tiny},
        {"exp2", -126.0f, 0x1p-126f},
        {"exp2", 127.0f, 0x1p127f},
        {"exp2", 128.0f, kInf},
        {"exp2", -150.0f, 0.0f},
        {"exp2", -kInf, 0.0f},
        {"exp2", kInf, kInf},
        {"exp2", kNaN, kNaN},
        {"expm1", 0.0f, 0.0f},
        {"expm1", -0.0f, -0.0f},
        {"expm1", tiny, tiny},
        {"expm1", -tiny, -tiny},
        {"expm1", -kInf, -1.0f},
        {"expm1", -20.0f, -1.0f},
        {"expm1", kInf, kInf},
        {"expm1", 88.7228394f, kInf},
        {"expm1", kNaN, kNaN},
        {"log", 1.0f, 0.0f},
        {"log", 0.0f, -kInf},
        {"log", -0.0f, -kInf},
        {"log", -1.0f, kNaN},
        {"log", -kInf, kNaN},
        {"log", -tiny, kNaN},
        {"log", kInf, kInf},
        {"log", kNaN, kNaN},
        {"log", tiny, -103.278931f},
        {"log2", 1.0f, 0.0f},
        {"log2", tiny, -149.0f},
        {"log2", 0x1p-130f, -130.0f},
        {"log2", 0x1p100f, 100.0f},
        {"log2", 0.5f, -1.0f},
        {"log2", 0.0f, -kInf},
        {"log2", -2.0f, kNaN},
        {"log2", kInf, kInf},
        {"log2", kNaN, kNaN},
        {"log1p", 0.0f, 0.0f},
        {"log1p", -0.0f, -0.0f},
        {"log1p", tiny, tiny},
        {"log1p", -tiny, -tiny},
        {"log1p", -1.0f, -kInf},
        {"log1p", -2.0f, kNaN},
        {"log1p", -kInf, kNaN},
        {"log1p", kInf, kInf},
        {"log1p", kNaN, kNaN},
        {"tanh", 0.0f, 0.0f},
        {"tanh", -0.0f, -0.0f},
        {"tanh", tiny, tiny},
        {"tanh", -tiny, -tiny},
        {"tanh", 10.0f, 1.0f},
        {"tanh", -10.0f, -1.0f},
        {"tanh", max, 1.0f},
        {"tanh", kInf, 1.0f},
        {"tanh", -kInf, -1.0f},
        {"tanh", kNaN, kNaN},
        {"sigmoid", 0.0f, 0.5f},
        {"sigmoid", -0.0f, 0.5f},
        {"sigmoid", kInf, 1.0f},
        {"sigmoid", -kInf, 0.0f},
        {"sigmoid", 100.0f, 1.0f},
        {"sigmoid", max, 1.0f},
        {"sigmoid", -max, 0.0f},
        {"sigmoid", -103.278931f, tiny},
        {"sigmoid", kNaN, kNaN},
        {"erf", 0.0f, 0.0f},
        {"erf", -0.0f, -0.0f},
        {"erf", kInf, 1.0f},
        {"erf", -kInf, -1.0f},
        {"erf", 5.0f, 1.0f},
        {"erf", -5.0f, -1.0f},
        {"erf", max, 1.0f},
        {"erf", kNaN, kNaN},
        {"rsqrt", 0.0f, kInf},
        {"rsqrt", -0.0f, -kInf},
        {"rsqrt", -1.0f, kNaN},
        {"rsqrt", -kInf, kNaN},
        {"rsqrt", kInf, 0.0f},
        {"rsqrt", kNaN, kNaN},
        {"rsqrt", 4.0f, 0.5f},
        {"rsqrt", 0x1p-126f, 0x1p63f},
        {"rsqrt", tiny, 0x1.6a09e6p+74f},  // 2^74.5
        {"rsqrt", max, 0x1p-64f},
        {"sin", 0.0f, 0.0f},
        {"sin", -0.0f, -0.0f},
        {"sin", tiny, tiny},
        {"sin", -tiny, -tiny},
        {"sin", 0x1p-20f, 0x1p-20f},
        {"sin", kInf, kNaN},
        {"sin", -kInf, kNaN},
        {"sin", kNaN, kNaN},
        {"sin", max, -0x1.0b3366p-1f},  // sin(FLT_MAX) rounded: the reduction is exact
        {"cos", 0.0f, 1.0f},
        {"cos", -0.0f, 1.0f},
        {"cos", tiny, 1.0f},
        {"cos", kInf, kNaN},
        {"cos", -kInf, kNaN},
        {"cos", kNaN, kNaN},
        {"floor", -0.5f, -1.0f},
        {"floor", -0.0f, -0.0f},
        {"floor", 0.5f, 0.0f},
        {"floor", -tiny, -1.0f},
        {"floor", 0x1.fffffep22f, 0x1.fffffcp22f},
        {"floor", -0x1.fffffep22f, -0x1p23f},
        {"floor", 0x1p23f + 1.0f, 0x1p23f + 1.0f},
        {"floor", -kInf, -kInf},
        {"floor", kNaN, kNaN},
        {"ceil", -0.5f, -0.0f},
        {"ceil", 0.5f, 1.0f},
        {"ceil", tiny, 1.0f},
        {"ceil", -0x1.fffffep22f, -0x1.fffffcp22f},
        {"ceil", kInf, kInf},
        {"ceil", kNaN, kNaN},
        {"trunc", -1.5f, -1.0f},
        {"trunc", -0.5f, -0.0f},
        {"trunc", 2.75f, 2.0f},
        {"trunc", max, max},
        {"trunc", kNaN, kNaN},
        {"round", 0.5f, 0.0f},
        {"round", 1.5f, 2.0f},
        {"round", 2.5f, 2.0f},
        {"round", -2.5f, -2.0f},
        {"round", -0.4f, -0.0f},
        {"round", 0x1.fffffep22f, 0x1p23f},
        {"round", 0x1p23f + 1.0f, 0x1p23f + 1.0f},
        {"round", -kInf, -kInf},
        {"round", kNaN, kNaN},
    };
    for (size_t fi = 0; fi < functions().size(); ++fi) {
        const Function& f = functions()[fi];
        std::vector<float> in;
        std::vector<float> want;
        for (const Special& c : cases) {
            if (std::string(c.fn) != f.name) continue;
            in.push_back(c.x);
            want.push_back(c.y);
        }
        ASSERT_FALSE(in.empty()) << f.name;
        const std::vector<float> out = run(*cpu_kernels()[fi], in);
        for (size_t i = 0; i < in.size(); ++i)
            EXPECT_TRUE(same_bits(out[i], want[i])) << f.name << "(" << std::hexfloat << in[i]
                                                    << ") = " << out[i] << ", want " << want[i];
    }
}

TEST(Math, EveryDeviceMatchesTheCpuBitForBit) {
    const auto kernels = all_kernels();
    size_t others = 0;
    for (Device* d : kiln::devices()) {
        if (d->info().backend == kiln::Backend::cpu) continue;
        ++others;
        // Fewer values off the CPU (PoCL is slower); the edges and specials are all included.
        const std::vector<float> in = inputs(1 << 16, 99);
        const auto compiled = kiln::compile_all(*d, kernels);
        for (size_t fi = 0; fi < functions().size(); ++fi) {
            const std::vector<float> want = run(*cpu_kernels()[fi], in);
            const std::vector<float> got = run(*compiled[fi], in);
            size_t mismatches = 0;
            for (size_t i = 0; i < in.size(); ++i) {
                if (same_bits(got[i], want[i])) continue;
                if (++mismatches <= 5)
                    ADD_FAILURE() << d->info().id << " " << functions()[fi].name << "("
                                  << std::hexfloat << in[i] << ") = " << got[i] << ", CPU "
                                  << want[i];
            }
            EXPECT_EQ(mismatches, 0u) << d->info().id << " " << functions()[fi].name;
        }
    }
    if (others == 0) GTEST_SKIP() << "only the CPU device is present";
}

TEST(Math, HalfTypesComputeInF32AndRoundOnce) {
    const std::vector<float> xs = {-3.0f, -1.0f, -0.25f, 0.0f, 0.3f, 1.0f, 2.5f, 7.0f};
    for (DType t : {DType::f16, DType::bf16}) {
        std::vector<kiln::ir::Kernel> kernels;
        for (const Function& f : functions()) kernels.push_back(unary_kernel(f.name, f.build, t));
        const auto compiled = kiln::compile_all(cpu_device(), kernels);  // one compiler run
        for (size_t fi = 0; fi < functions().size(); ++fi) {
            const Function& f = functions()[fi];
            std::vector<float> widened;
            kiln::Buffer bx(cpu_device(), t, xs.size()), by(cpu_device(), t, xs.size());
            std::vector<uint16_t> in;
            for (float x : xs) {
                in.push_back(t == DType::f16 ? kiln::semantics::f32_to_f16(x)
                                             : kiln::semantics::f32_to_bf16(x));
                widened.push_back(t == DType::f16 ? kiln::semantics::f16_to_f32(in.back())
                                                  : kiln::semantics::bf16_to_f32(in.back()));
            }
            bx.upload_raw(in.data(), t, in.size());
            compiled[fi]->launch(1, {bx, by});
            std::vector<uint16_t> out(xs.size());
            by.download_raw(out.data(), t, out.size());
            const std::vector<float> f32_out = run(*cpu_kernels()[fi], widened);
            for (size_t i = 0; i < xs.size(); ++i) {
                const uint16_t want = t == DType::f16 ? kiln::semantics::f32_to_f16(f32_out[i])
                                                      : kiln::semantics::f32_to_bf16(f32_out[i]);
                EXPECT_EQ(out[i], want) << f.name << " " << kiln::name(t) << " x=" << xs[i];
            }
        }
    }
}

TEST(Math, OtherDtypesAreErrorsNamingTheFunction) {
    kiln::KernelBuilder k("bad", 64);
    Expr i = k.absolute_pos();
    Expr flag = i < 3;
    for (const Function& f : functions()) {
        // The rounding functions return an integer as it is; bool is no number for any.
        const bool takes_integers = f.max_ulp == 0;
        if (takes_integers) {
            EXPECT_EQ(f.build(i).node(), i.node()) << f.name;
        }
        const Expr& bad = takes_integers ? flag : i;
        const std::string what = kiln::test::error_of([&] { f.build(bad); });
        EXPECT_NE(what.find(f.name), std::string::npos) << what;
        EXPECT_NE(what.find(takes_integers ? "bool" : "i32"), std::string::npos) << what;
    }
    // A literal is f32.
    EXPECT_EQ(kiln::exp(Expr(1.0)).type(), DType::f32);
    EXPECT_EQ(kiln::log(Expr(2)).type(), DType::f32);
    EXPECT_EQ(kiln::floor(Expr(2)).type(), DType::f32);
}

TEST(Math, CudaSourceCompilesWithNvrtc) {
    std::string why;
    if (!kiln::cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
    const auto kernels = all_kernels();
    const std::string source = kiln::generate_source(kiln::Backend::cuda, kernels);
    std::string log;
    const auto cubin = kiln::cuda::nvrtc_compile(source, "sm_90", &log);
    EXPECT_FALSE(cubin.empty()) << log;
}

// The whole f32 range, every KILN_MATH_STRIDE-th bit pattern (default 1: all 2^32); run by
// hand with --gtest_also_run_disabled_tests to measure the bounds stated in math.hpp.
TEST(Math, DISABLED_Exhaustive) {
    const char* s = std::getenv("KILN_MATH_STRIDE");
    const uint64_t stride = s ? std::strtoull(s, nullptr, 10) : 1;
    const char* only = std::getenv("KILN_MATH_ONLY");
    const size_t chunk = size_t{1} << 22;
    for (size_t fi = 0; fi < functions().size(); ++fi) {
        const Function& f = functions()[fi];
        if (only && std::string(only) != f.name) continue;
        double worst = 0;
        float worst_x = 0;
        std::vector<float> in;
        for (uint64_t b = 0; b < (uint64_t{1} << 32);) {
            in.clear();
            for (; b < (uint64_t{1} << 32) && in.size() < chunk; b += stride)
                in.push_back(from_bits(static_cast<uint32_t>(b)));
            const std::vector<float> out = run(*cpu_kernels()[fi], in);
            for (size_t i = 0; i < in.size(); ++i) {
                const double err = ulp_error(out[i], f.reference(in[i]));
                if (!(err <= worst)) {
                    worst = err;
                    worst_x = in[i];
                }
            }
        }
        std::printf("%-8s max error %.4f ulp at %a\n", f.name, worst, worst_x);
        EXPECT_LE(worst, f.max_ulp) << f.name;
    }
}

}  // namespace
