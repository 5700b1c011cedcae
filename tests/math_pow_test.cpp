// kiln::pow (include/kiln/math.hpp): its error bound against long double powl on pairs whose
// results cover the whole f32 range, C's powf special values, bit-identity across devices and
// the dtype rules.
#include <gtest/gtest.h>

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
#include "support/errors.hpp"
#include "support/ulp.hpp"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Expr;
using kiln::test::from_bits;
using kiln::test::same_bits;
using kiln::test::ulp_error;

constexpr double kBound = 1.0;  // the bound math.hpp states
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Pairs {
    std::vector<float> x, y;
    void add(float a, float b) {
        x.push_back(a);
        y.push_back(b);
    }
};

// z[i] = pow(x[i], y[i]) over buffers of `type`.
kiln::ir::Kernel pow_kernel(DType type = DType::f32) {
    kiln::KernelBuilder k("math_pow", 64);
    auto x = k.input("x", type);
    auto y = k.input("y", type);
    auto z = k.output("z", type);
    Expr i = k.absolute_pos();
    k.if_(i < z.len(), [&] { z[i] = kiln::pow(x[i], y[i]); });
    return k.finish();
}

std::vector<float> run(Device& d, const Pairs& p) {
    const size_t n = p.x.size();
    kiln::Buffer bx(d, DType::f32, n), by(d, DType::f32, n), bz(d, DType::f32, n);
    bx.upload(p.x);
    by.upload(p.y);
    kiln::compile(d, pow_kernel())->launch(static_cast<int64_t>((n + 63) / 64), {bx, by, bz});
    return bz.download<float>();
}

Device& cpu_device() {
    for (Device* d : kiln::devices())
        if (d->info().backend == kiln::Backend::cpu) return *d;
    throw kiln::Error("no CPU device");
}

// Pairs whose results spread over the whole range: x anywhere (subnormals included) with y
// chosen so that log2 of the result is uniform in [-160, 130]; x near 1 with large y; negative
// x with integer y; small integers; moderate x and y.
Pairs sweep(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> target(-160.0, 130.0), unit(-1.0, 1.0);
    Pairs p;
    for (size_t i = 0; i < count; ++i) {
        const uint32_t r = rng();
        switch (i % 5) {
            case 0:
            case 1: {
                const float x = from_bits(1 + r % 0x7f7fffffu);
                if (x == 1.0f) continue;
                p.add(x, static_cast<float>(target(rng) / std::log2(static_cast<double>(x))));
                break;
            }
            case 2: {  // x = 1 +- a few ulp, y large
                const float x = from_bits(0x3f800000u + (r % 64) - 32);
                const double l = std::log2(static_cast<double>(x));
                p.add(x, l == 0 ? 1e30f : static_cast<float>(target(rng) / l));
                break;
            }
            case 3: {  // negative x, integer y (odd and even)
                const float x = -std::ldexp(1.0f + static_cast<float>(unit(rng)) * 0.5f,
                                            static_cast<int>(r % 40) - 20);
                p.add(x, static_cast<float>(static_cast<int>(r % 41) - 20));
                break;
            }
            default:
                p.add(static_cast<float>(unit(rng) * 8.0 + 8.0),
                      static_cast<float>(unit(rng) * 12));
        }
    }
    for (int a = 0; a <= 12; ++a)
        for (int b = -12; b <= 12; ++b) p.add(static_cast<float>(a), static_cast<float>(b));
    return p;
}

TEST(MathPow, ErrorBoundOverTheWholeRange) {
    const Pairs p = sweep(1 << 19, 7);
    const std::vector<float> z = run(cpu_device(), p);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < z.size(); ++i) {
        const double err = ulp_error(
            z[i], std::pow(static_cast<long double>(p.x[i]), static_cast<long double>(p.y[i])));
        if (!(err <= worst)) {
            worst = err;
            at = i;
        }
    }
    EXPECT_LE(worst, kBound) << "pow(" << std::hexfloat << p.x[at] << ", " << p.y[at]
                             << ") = " << z[at];
    std::printf("pow max error %.3f ulp at (%a, %a)\n", worst, p.x[at], p.y[at]);
}

// Every pair of these values: C99's special cases (Annex F.9.4.4) and their neighbours. Each
// result is checked against powl: NaN for NaN, the same signed zero or infinity, else within the
// bound (most of these are exact).
TEST(MathPow, SpecialValuesAsCsPowf) {
    const float max = std::numeric_limits<float>::max(), tiny = from_bits(1);
    const std::vector<float> v = {0.0f,
                                  -0.0f,
                                  kInf,
                                  -kInf,
                                  kNaN,
                                  1.0f,
                                  -1.0f,
                                  0.5f,
                                  -0.5f,
                                  2.0f,
                                  -2.0f,
                                  3.0f,
                                  -3.0f,
                                  2.5f,
                                  -2.5f,
                                  max,
                                  -max,
                                  tiny,
                                  -tiny,
                                  0x1p24f,
                                  0x1p24f + 2,
                                  -0x1p24f - 2,
                                  0x1p31f,
                                  1.0f + 0x1p-23f,
                                  1.0f - 0x1p-24f,
                                  0x1p-126f};
    Pairs p;
    for (float x : v)
        for (float y : v) p.add(x, y);
    const std::vector<float> z = run(cpu_device(), p);
    for (size_t i = 0; i < z.size(); ++i) {
        const long double ref =
            std::pow(static_cast<long double>(p.x[i]), static_cast<long double>(p.y[i]));
        EXPECT_LE(ulp_error(z[i], ref), kBound)
            << "pow(" << std::hexfloat << p.x[i] << ", " << p.y[i] << ") = " << z[i] << ", powl "
            << static_cast<double>(ref);
    }
    // The cases where NaN is not contagious, and exact small powers.
    const Pairs exact = [] {
        Pairs q;
        q.add(kNaN, 0.0f);
        q.add(kNaN, -0.0f);
        q.add(1.0f, kNaN);
        q.add(-1.0f, kInf);
        q.add(2.0f, 10.0f);
        q.add(-2.0f, -3.0f);
        q.add(10.0f, 2.0f);
        return q;
    }();
    const std::vector<float> want = {1.0f, 1.0f, 1.0f, 1.0f, 1024.0f, -0.125f, 100.0f};
    const std::vector<float> got = run(cpu_device(), exact);
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(same_bits(got[i], want[i])) << i << ": " << got[i];
}

TEST(MathPow, EveryDeviceMatchesTheCpuBitForBit) {
    const Pairs p = sweep(1 << 14, 3);
    const std::vector<float> want = run(cpu_device(), p);
    size_t others = 0;
    for (Device* d : kiln::devices()) {
        if (d->info().backend == kiln::Backend::cpu) continue;
        ++others;
        const std::vector<float> got = run(*d, p);
        size_t bad = 0;
        for (size_t i = 0; i < got.size(); ++i)
            if (!same_bits(got[i], want[i]) && ++bad <= 5)
                ADD_FAILURE() << d->info().id << " pow(" << std::hexfloat << p.x[i] << ", "
                              << p.y[i] << ") = " << got[i] << ", CPU " << want[i];
        EXPECT_EQ(bad, 0u) << d->info().id;
    }
    if (others == 0) GTEST_SKIP() << "only the CPU device is present";
}

TEST(MathPow, LiteralsTakeTheOtherTypeAndMismatchesAreErrors) {
    kiln::KernelBuilder k("pow_types", 64);
    auto h = k.input("h", DType::f16);
    auto f = k.input("f", DType::f32);
    EXPECT_EQ(kiln::pow(h[0], 2).type(), DType::f16);
    EXPECT_EQ(kiln::pow(0.5, f[0]).type(), DType::f32);
    EXPECT_EQ(kiln::pow(Expr(2), Expr(3)).type(), DType::f32);
    const std::string mixed = kiln::test::error_of([&] { kiln::pow(h[0], f[0]); });
    EXPECT_NE(mixed.find("pow: x is f16 but y is f32"), std::string::npos) << mixed;
    const std::string ints = kiln::test::error_of([&] { kiln::pow(k.absolute_pos(), 2); });
    EXPECT_NE(ints.find("pow needs float arguments"), std::string::npos) << ints;
}

// Many more pairs, by hand with --gtest_also_run_disabled_tests, to measure the bound.
TEST(MathPow, DISABLED_Wide) {
    const char* s = std::getenv("KILN_POW_PAIRS");
    const size_t count = s ? std::strtoull(s, nullptr, 10) : (size_t{1} << 26);
    double worst = 0;
    float wx = 0, wy = 0;
    for (uint32_t seed = 100; seed < 100 + count / (1 << 22) + 1; ++seed) {
        const Pairs p = sweep(1 << 22, seed);
        const std::vector<float> z = run(cpu_device(), p);
        for (size_t i = 0; i < z.size(); ++i) {
            const double err = ulp_error(
                z[i], std::pow(static_cast<long double>(p.x[i]), static_cast<long double>(p.y[i])));
            if (!(err <= worst)) {
                worst = err;
                wx = p.x[i];
                wy = p.y[i];
            }
        }
    }
    std::printf("pow max error %.4f ulp at (%a, %a)\n", worst, wx, wy);
    EXPECT_LE(worst, kBound);
}

}  // namespace
