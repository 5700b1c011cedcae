// The scalar layer (include/kiln/scalar_semantics.h, which every kernel and the oracle compile)
// against references that share none of its code: f16 conversions against the compiler's
// _Float16, bf16 conversions against a nearest-neighbour rounding in exact double arithmetic
// (itself checked against _Float16 on the f16 format), integer division, remainder,
// float-to-integer casts and min/max against plain C++ wherever C++ defines the result, and dp4a
// against a plain loop. The CI sweeps take every rounding decision (ties, carries, overflow,
// subnormals) for every result value; DISABLED_ tests cover all 2^32 inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/semantics.hpp"

namespace {

namespace sem = kiln::semantics;

float from_bits(uint32_t u) {
    return std::bit_cast<float>(u);
}
uint32_t to_bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

// A binary floating-point format narrower than f32: `mantissa` stored fraction bits, `exponent`
// exponent bits (f16: 10 and 5, bf16: 7 and 8).
struct Format {
    const char* name;
    int mantissa;
    int exponent;
    int bias() const { return (1 << (exponent - 1)) - 1; }
    uint16_t inf_bits() const { return static_cast<uint16_t>(((1u << exponent) - 1) << mantissa); }
};
constexpr Format kF16{"f16", 10, 5};
constexpr Format kBf16{"bf16", 7, 8};

// The exact value of a finite narrow bit pattern.
double narrow_value(const Format& f, uint16_t bits) {
    const int e = (bits >> f.mantissa) & ((1 << f.exponent) - 1);
    const int m = bits & ((1 << f.mantissa) - 1);
    const double magnitude = e == 0 ? std::ldexp(m, 1 - f.bias() - f.mantissa)
                                    : std::ldexp(m + (1 << f.mantissa), e - f.bias() - f.mantissa);
    return (bits >> 15) ? -magnitude : magnitude;
}

// Round-to-nearest-even into the format, by definition: of the two neighbouring representable
// magnitudes (or the first one past the largest finite one, which stands for infinity), the
// nearer; on a tie, the one with an even last bit. Every difference is exact in double.
uint16_t nearest(const Format& f, float x) {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (std::isinf(a)) return sign | f.inf_bits();
    uint32_t lo = 0;  // the largest magnitude pattern whose value is <= a (inf_bits: beyond)
    for (int step = 1 << 14; step > 0; step >>= 1)
        if (lo + step <= f.inf_bits() && narrow_value(f, static_cast<uint16_t>(lo + step)) <= a)
            lo += step;
    if (lo == f.inf_bits()) return sign | f.inf_bits();
    // The value one past lo: the next pattern, or 2^(emax+1) past the largest finite one.
    const double lo_value = narrow_value(f, static_cast<uint16_t>(lo));
    const double hi_value = lo + 1 == f.inf_bits()
                                ? std::ldexp(1.0, (1 << f.exponent) - 1 - f.bias())
                                : narrow_value(f, static_cast<uint16_t>(lo + 1));
    const double below = a - lo_value, above = hi_value - a;
    const bool up = above < below || (above == below && (lo & 1));
    return static_cast<uint16_t>(sign | (up ? lo + 1 : lo));
}

uint16_t compiler_f16(float x) {
    const _Float16 h = static_cast<_Float16>(x);
    return std::bit_cast<uint16_t>(h);
}

// f32 inputs that take every rounding decision into a format: for every sign and exponent and
// every run of kept bits, the discarded bits at 0, 1, half - 1, half, half + 1 and all ones. The
// kept bits are the format's mantissa where the result is normal and fewer where it is
// subnormal; `kept_max` caps their count so the sweep stays small, the top bits taken whole and
// the rest with a stride. Plus `random_count` random bit patterns.
std::vector<float> rounding_inputs(const Format& f, int kept_max, size_t random_count) {
    std::vector<float> v;
    for (uint32_t sign = 0; sign < 2; ++sign)
        for (uint32_t e = 0; e < 256; ++e) {
            // Mantissa bits of f32 kept by the format at this exponent (normal: f.mantissa).
            const int unbiased = static_cast<int>(std::max(e, 1u)) - 127;  // f32 subnormals: -126
            const int min_normal = 1 - f.bias();
            int kept = f.mantissa - std::max(0, min_normal - unbiased);
            kept = std::clamp(kept, 0, 23);
            const int dropped = 23 - kept;
            const uint32_t half = dropped > 0 ? 1u << (dropped - 1) : 0;
            const uint32_t ones = dropped > 0 ? (1u << dropped) - 1 : 0;
            std::vector<uint32_t> lows = {0, 1, half - 1, half, half + 1, ones};
            if (dropped == 0) lows = {0};
            const uint32_t kept_count = 1u << kept;
            const uint32_t stride = kept > kept_max ? 1u << (kept - kept_max) : 1u;
            for (uint32_t hi = 0; hi < kept_count;
                 hi += hi < 4 || hi + 4 >= kept_count ? 1 : stride)
                for (uint32_t low : lows) {
                    if (dropped < 32 && low > ones) continue;
                    v.push_back(from_bits((sign << 31) | (e << 23) | (hi << dropped) | low));
                }
        }
    std::mt19937 rng(2024);
    for (size_t i = 0; i < random_count; ++i) v.push_back(from_bits(rng()));
    return v;
}

std::string hex(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

// NaN in, kiln's documented NaN out: quiet, the sign and the top payload bits kept.
uint16_t documented_nan(const Format& f, float x) {
    const uint32_t b = to_bits(x);
    const uint32_t quiet = 1u << (f.mantissa - 1);
    const uint32_t payload = (b & 0x7fffffu) >> (23 - f.mantissa);
    return static_cast<uint16_t>(((b >> 16) & 0x8000u) | f.inf_bits() | quiet | payload);
}

// Compares kiln's conversion of every input with `reference` (NaNs with documented_nan).
template <typename Kiln, typename Reference>
void expect_conversions(const Format& f, const std::vector<float>& inputs, Kiln kiln_convert,
                        Reference reference) {
    size_t bad = 0;
    for (float x : inputs) {
        const uint16_t got = kiln_convert(x);
        const uint16_t want = std::isnan(x) ? documented_nan(f, x) : reference(x);
        if (got != want && ++bad <= 8)
            ADD_FAILURE() << "f32 " << hex(to_bits(x)) << " -> " << f.name << ": kiln " << hex(got)
                          << ", reference " << hex(want);
    }
    EXPECT_EQ(bad, 0u) << f.name << " conversions of " << inputs.size() << " inputs";
}

TEST(ScalarReference, NearestRoundingReferenceMatchesTheCompilersFloat16) {
    // The bf16 reference below is this function; on f16 it must agree with the compiler.
    size_t bad = 0;
    for (float x : rounding_inputs(kF16, 10, 1 << 14)) {
        if (std::isnan(x)) continue;
        if (nearest(kF16, x) != compiler_f16(x) && ++bad <= 8)
            ADD_FAILURE() << hex(to_bits(x)) << ": reference " << hex(nearest(kF16, x))
                          << ", _Float16 " << hex(compiler_f16(x));
    }
    EXPECT_EQ(bad, 0u);
}

TEST(ScalarReference, F32ToF16MatchesTheCompilersFloat16) {
    expect_conversions(kF16, rounding_inputs(kF16, 10, 1 << 20), sem::f32_to_f16, compiler_f16);
}

TEST(ScalarReference, F32ToBf16MatchesNearestEvenRounding) {
    expect_conversions(kBf16, rounding_inputs(kBf16, 7, 1 << 20), sem::f32_to_bf16,
                       [](float x) { return nearest(kBf16, x); });
}

TEST(ScalarReference, EveryF16AndBf16WidensExactly) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const uint16_t h = static_cast<uint16_t>(b);
        const float f16 = sem::f16_to_f32(h), bf16 = sem::bf16_to_f32(h);
        const float compiler = static_cast<float>(std::bit_cast<_Float16>(h));
        for (const auto& [format, got, want] :
             {std::tuple{kF16, f16, compiler},
              std::tuple{kBf16, bf16, static_cast<float>(narrow_value(kBf16, h))}}) {
            const bool nan_in = (h & 0x7fff) > format.inf_bits();
            if (nan_in) {
                // The sign and the whole payload, in f32's top payload bits.
                const uint32_t payload = (h & ((1u << format.mantissa) - 1u))
                                         << (23 - format.mantissa);
                const uint32_t expected =
                    (static_cast<uint32_t>(h & 0x8000) << 16) | 0x7f800000u | payload;
                EXPECT_EQ(to_bits(got), expected) << format.name << " " << hex(h);
                continue;
            }
            if ((h & 0x7fff) == format.inf_bits()) {
                EXPECT_EQ(got, (h & 0x8000) ? -INFINITY : INFINITY) << format.name << hex(h);
                continue;
            }
            EXPECT_EQ(to_bits(got), to_bits(want)) << format.name << " " << hex(h);
        }
    }
}

// Every f32 bit pattern: about a minute; run by hand with --gtest_also_run_disabled_tests.
TEST(ScalarReference, DISABLED_EveryF32ToF16AndBf16) {
    size_t bad16 = 0, bad_bf16 = 0;
    for (uint64_t b = 0; b < (uint64_t{1} << 32); ++b) {
        const float x = from_bits(static_cast<uint32_t>(b));
        const bool nan = std::isnan(x);
        const uint16_t want16 = nan ? documented_nan(kF16, x) : compiler_f16(x);
        bad16 += sem::f32_to_f16(x) != want16;
        if (nan) {
            bad_bf16 += sem::f32_to_bf16(x) != documented_nan(kBf16, x);
        } else if ((b & 0xffff) == 0 || (b & 0xffff) == 0x8000 || (b & 0x7fff) == 0x7fff ||
                   (b & 0xffff) == 0x0001) {
            bad_bf16 += sem::f32_to_bf16(x) != nearest(kBf16, x);  // the slow reference
        } else {
            // Away from ties and exact values the nearer neighbour is the one the top discarded
            // bit points to (its value is exact, no double rounding is involved).
            const uint32_t up = (b & 0x8000) ? 1 : 0;
            const uint32_t r = (static_cast<uint32_t>(b) >> 16) + up;
            bad_bf16 += sem::f32_to_bf16(x) != static_cast<uint16_t>(r);
        }
    }
    EXPECT_EQ(bad16, 0u);
    EXPECT_EQ(bad_bf16, 0u);
}

// ---- integers ----

template <typename T>
std::vector<T> integer_inputs(size_t random_count, uint64_t seed) {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {0,
                        1,
                        2,
                        3,
                        7,
                        L::max(),
                        static_cast<T>(L::max() - 1),
                        L::min(),
                        static_cast<T>(L::min() + 1)};
    if constexpr (L::is_signed) v.insert(v.end(), {T(-1), T(-2), T(-3), T(-7)});
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < random_count; ++i) {
        const uint64_t r = rng();
        v.push_back(static_cast<T>(i % 3 == 0 ? r : (i % 3 == 1 ? r >> 40 : r % 97)));
        if constexpr (L::is_signed)
            if (i % 2) v.back() = static_cast<T>(-v.back());
    }
    return v;
}

// kiln's / and % against C++'s where C++ defines them (b != 0, and not MIN / -1), and the
// documented meaning elsewhere: x / 0 == 0, x % 0 == x, MIN / -1 == MIN, MIN % -1 == 0.
template <typename T, typename Div, typename Rem>
void expect_division(const std::vector<T>& values, Div kiln_div, Rem kiln_rem) {
    size_t bad = 0;
    for (T a : values)
        for (T b : values) {
            T want_q, want_r;
            if (b == 0) {
                want_q = 0;
                want_r = a;
            } else if (std::is_signed_v<T> && a == std::numeric_limits<T>::min() && b == T(-1)) {
                want_q = a;
                want_r = 0;
            } else {
                want_q = static_cast<T>(a / b);
                want_r = static_cast<T>(a % b);
            }
            if ((kiln_div(a, b) != want_q || kiln_rem(a, b) != want_r) && ++bad <= 8)
                ADD_FAILURE() << +a << " / " << +b << ": kiln " << +kiln_div(a, b) << " rem "
                              << +kiln_rem(a, b) << ", C++ " << +want_q << " rem " << +want_r;
        }
    EXPECT_EQ(bad, 0u);
}

TEST(ScalarReference, IntegerDivisionAndRemainder) {
    std::vector<int8_t> i8s;
    std::vector<uint8_t> u8s;
    for (int v = 0; v < 256; ++v) {
        i8s.push_back(static_cast<int8_t>(v));
        u8s.push_back(static_cast<uint8_t>(v));
    }
    expect_division(i8s, sem::kiln_div_i8, sem::kiln_rem_i8);  // every pair
    expect_division(u8s, sem::kiln_div_u8, sem::kiln_rem_u8);
    expect_division(integer_inputs<int32_t>(600, 1), sem::kiln_div_i32, sem::kiln_rem_i32);
    expect_division(integer_inputs<uint32_t>(600, 2), sem::kiln_div_u32, sem::kiln_rem_u32);
    expect_division(integer_inputs<int64_t>(600, 3), sem::kiln_div_i64, sem::kiln_rem_i64);
    expect_division(integer_inputs<uint64_t>(600, 4), sem::kiln_div_u64, sem::kiln_rem_u64);
}

// float -> T: C++'s truncating conversion wherever the truncated value fits T (C++ defines only
// that); NaN gives 0 and everything else saturates at T's range, as documented.
template <typename T, typename Convert>
void expect_float_to_int(const std::vector<float>& inputs, Convert kiln_convert, const char* what) {
    using L = std::numeric_limits<T>;
    size_t bad = 0;
    for (float x : inputs) {
        T want;
        const double t = std::trunc(static_cast<double>(x));
        if (std::isnan(x))
            want = 0;
        else if (t < static_cast<double>(L::min()))
            want = L::min();
        else if (t >= std::ldexp(1.0, L::digits))  // L::max() + 1, exact (L::max() may not be)
            want = L::max();
        else
            want = static_cast<T>(x);  // defined: the truncated value is representable
        if (kiln_convert(x) != want && ++bad <= 8)
            ADD_FAILURE() << what << "(" << hex(to_bits(x)) << " = " << x << "): kiln "
                          << +kiln_convert(x) << ", C++ " << +want;
    }
    EXPECT_EQ(bad, 0u) << what;
}

TEST(ScalarReference, FloatToIntegerTruncatesAndSaturates) {
    std::vector<float> inputs;
    std::mt19937 rng(5);
    for (int i = 0; i < (1 << 18); ++i) inputs.push_back(from_bits(rng()));
    // Every binade's edges and the neighbourhood of each type's limits.
    for (uint32_t e = 0; e < 256; ++e)
        for (uint32_t m : {0u, 1u, 0x400000u, 0x7fffffu})
            for (uint32_t s : {0u, 1u}) inputs.push_back(from_bits((s << 31) | (e << 23) | m));
    for (float limit : {128.0f, 256.0f, 2147483648.0f, 4294967296.0f, 9223372036854775808.0f})
        for (float sign : {1.0f, -1.0f})
            for (int d = -4; d <= 4; ++d)
                inputs.push_back(from_bits(to_bits(sign * limit) + static_cast<uint32_t>(d)));
    for (float x : {-1.0f, -0.5f, -0.0f, 0.5f, 0.99999994f, -0.99999994f, 127.5f, -128.5f, 255.5f})
        inputs.push_back(x);
    expect_float_to_int<int8_t>(inputs, sem::kiln_f32_to_i8, "f32_to_i8");
    expect_float_to_int<uint8_t>(inputs, sem::kiln_f32_to_u8, "f32_to_u8");
    expect_float_to_int<int32_t>(inputs, sem::kiln_f32_to_i32, "f32_to_i32");
    expect_float_to_int<uint32_t>(inputs, sem::kiln_f32_to_u32, "f32_to_u32");
    expect_float_to_int<int64_t>(inputs, sem::kiln_f32_to_i64, "f32_to_i64");
}

TEST(ScalarReference, MinAndMaxPropagateNaNAndOtherwiseAgreeWithCpp) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::mt19937 rng(6);
    for (int i = 0; i < (1 << 16); ++i) {
        const float a = from_bits(rng()), b = from_bits(rng());
        if (std::isnan(a) || std::isnan(b)) {
            EXPECT_TRUE(std::isnan(sem::kiln_min_f32(a, b)) && std::isnan(sem::kiln_max_f32(a, b)));
        } else if (a != b) {  // +0 and -0 compare equal; which one C++ returns is its choice
            EXPECT_EQ(to_bits(sem::kiln_min_f32(a, b)), to_bits(std::min(a, b)));
            EXPECT_EQ(to_bits(sem::kiln_max_f32(a, b)), to_bits(std::max(a, b)));
        }
    }
    EXPECT_TRUE(std::isnan(sem::kiln_min_f32(1.0f, nan)));
    EXPECT_TRUE(std::isnan(sem::kiln_max_f32(nan, 1.0f)));
    for (int32_t a : integer_inputs<int32_t>(200, 7))
        for (int32_t b : integer_inputs<int32_t>(50, 8)) {
            EXPECT_EQ(sem::kiln_min_i32(a, b), std::min(a, b));
            EXPECT_EQ(sem::kiln_max_i32(a, b), std::max(a, b));
        }
    for (int a = 0; a < 256; ++a)
        for (int b = 0; b < 256; ++b) {
            const auto sa = static_cast<int8_t>(a), sb = static_cast<int8_t>(b);
            ASSERT_EQ(sem::kiln_min_i8(sa, sb), std::min(sa, sb));
            ASSERT_EQ(sem::kiln_max_u8(static_cast<uint8_t>(a), static_cast<uint8_t>(b)),
                      std::max(static_cast<uint8_t>(a), static_cast<uint8_t>(b)));
        }
}

TEST(ScalarReference, Dp4aIsAWrappingSumOfFourSignedByteProducts) {
    std::mt19937 rng(8);
    auto byte = [](uint32_t word, int k) { return static_cast<int8_t>((word >> (8 * k)) & 0xff); };
    std::vector<uint32_t> edges = {0, 0x80808080u, 0x7f7f7f7fu, 0xffffffffu, 0x01010101u};
    for (int i = 0; i < (1 << 20); ++i) {
        const uint32_t a = i < 25 ? edges[i % 5] : rng(), b = i < 25 ? edges[i / 5] : rng();
        const int32_t c =
            i % 7 == 0 ? std::numeric_limits<int32_t>::max() : static_cast<int32_t>(rng());
        int64_t sum = c;
        for (int k = 0; k < 4; ++k) sum += int64_t{byte(a, k)} * byte(b, k);
        const auto want = static_cast<int32_t>(static_cast<uint32_t>(sum));
        const int32_t got = sem::kiln_dp4a(static_cast<int32_t>(a), static_cast<int32_t>(b), c);
        if (got != want) {
            ADD_FAILURE() << "dp4a(" << hex(a) << ", " << hex(b) << ", " << c << ") = " << got
                          << ", plain loop " << want;
            break;
        }
    }
}

}  // namespace
