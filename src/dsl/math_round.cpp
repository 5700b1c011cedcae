// rsqrt and the rounding functions (floor, ceil, trunc, round) as DSL expressions. Rounding to
// an integer is exact: it clears fraction bits by the exponent, or adds and subtracts 2^23.
// rsqrt scales x by an even power of two into [1, 4) (exact), takes 1/sqrt there, corrects it
// once with its residual computed by fma, rounds it correctly by an exact integer test, then
// scales back (exact).
#include <limits>

#include "dsl/math_internal.hpp"
#include "kiln/math.hpp"

namespace kiln {
namespace {

using namespace math_detail;

// The sign of 1 - m mu^2 for m = M 2^-23 and mu = q 2^-25 (M < 2^25, q <= 2^25 + 1), exactly, in
// 64-bit integers: m mu^2 = M q^2 2^-73, and M q^2 - 2^73 = (M a - 2^48) 2^25 + M b with
// q^2 = a 2^25 + b. Returns that difference's sign reversed, as a bool: true when mu < 1/sqrt(m).
Expr below_rsqrt(const Expr& big_m, const Expr& q) {
    const Expr q2 = q * q;
    const Expr v = (big_m * (q2 >> 25) - (int64_t{1} << 48)) * (int64_t{1} << 25) +
                   big_m * (q2 & ((int64_t{1} << 25) - 1));
    return v < int64_t{0};
}

// 1/sqrt(m) for m in [1, 4), correctly rounded: a candidate y within an ulp, then the exact test
// of which side of y, and of the midpoint beyond it, 1/sqrt(m) lies.
Expr rsqrt_reduced(const Expr& m) {
    // y0 = 1/sqrt(m) rounded twice; e = 1 - m y0^2 (|e| < 2^-22) with y0^2 = h + l exactly;
    // 1/sqrt(m) = y0 (1 - e)^-1/2 = y0 + y0 e/2 + O(2^-44).
    const Expr y0 = 1.0f / sqrt(m);
    const Expr h = y0 * y0;
    const Expr e = fma(-m, fma(y0, y0, -h), fma(-m, h, 1.0f));
    const Expr y = fma(y0 * 0.5f, e, y0);  // in [0.5, 1]
    // m = M 2^-23 and y = Y 2^-24 with integers M and Y (exponents 0 or 1 and -1 or 0).
    const Expr mb = bitcast(DType::i32, m), yb = bitcast(DType::i32, y);
    const Expr big_m = cast(DType::i64, (mb & 0x007fffff) | 0x00800000)
                       << cast(DType::i64, (mb >> 23) - 127);
    const Expr big_y = cast(DType::i64, (yb & 0x007fffff) | 0x00800000)
                       << cast(DType::i64, (yb >> 23) - 126);
    // 1/sqrt(m) is never a midpoint (nor, but at m = 1, a float), so the comparisons are strict.
    const Expr up = below_rsqrt(big_m, 2 * big_y);
    const Expr past_midpoint =
        select(up, below_rsqrt(big_m, 2 * big_y + 1), !below_rsqrt(big_m, 2 * big_y - 1));
    return select(past_midpoint, bitcast(DType::f32, yb + select(up, 1, -1)), y);
}

Expr rsqrt_f32(const Expr& x) {
    // x = 2^(2k) m, m in [1, 4); subnormal x is scaled by 2^24 first (then the result by 2^12).
    const Expr sub = bits_of(x) < 0x00800000u;
    const Expr xs = select(sub, x * 0x1p24f, x);
    const Expr k = ((bitcast(DType::i32, xs) >> 23) - 127) >> 1;
    const Expr m = bitcast(DType::f32, bitcast(DType::i32, xs) - (k << 24));
    const Expr scaled = rsqrt_reduced(m) * pow2i(select(sub, 12, 0) - k);
    // 0, negative, inf and NaN: 1/sqrt(x) is exact there (+-inf, NaN, +0, NaN).
    const Expr finite_positive = bits_of(x) - 1u < 0x7f7fffffu;
    return select(finite_positive, scaled, 1.0f / sqrt(x));
}

// x rounded toward zero: the fraction bits below the binary point cleared.
Expr trunc_f32(const Expr& x) {
    const Expr bits = bits_of(x);
    const Expr e = cast(DType::i32, (bits >> 23) & 0xffu) - 127;  // unbiased exponent
    const Expr cleared = bits & ~(0x007fffffu >> cast(DType::u32, max(e, 0)));
    // e < 0: |x| < 1, a zero of x's sign; e >= 23: already an integer (inf and NaN too).
    return f32_from_bits(select(e < 0, bits & 0x80000000u, select(e < 23, cleared, bits)));
}

Expr floor_f32(const Expr& x) {
    const Expr t = trunc_f32(x);
    return select(t > x, t - 1.0f, t);  // t - 1 is exact: |t| < 2^23 where t != x
}

Expr ceil_f32(const Expr& x) {
    const Expr t = trunc_f32(x);
    return select(t < x, t + 1.0f, t);
}

// Half to even: |x| + 2^23 rounds to an integer (ties to even) for |x| < 2^23.
Expr round_f32(const Expr& x) {
    const Expr a = abs(x);
    return select(a < 0x1p23f, with_sign_of((a + 0x1p23f) - 0x1p23f, x), x);
}

// The rounding functions leave an integer argument as it is.
Expr on_number(const char* fn, const Expr& x, Expr (*body)(const Expr&)) {
    if (!x.weak() && is_integer(x.type())) return x;
    if (x.type() == DType::boolean) fail("{} needs a number (a float or an integer), got bool", fn);
    return on_f32(fn, x, body);
}

}  // namespace

Expr rsqrt(const Expr& x) {
    return on_f32("rsqrt", x, rsqrt_f32);
}
Expr floor(const Expr& x) {
    return on_number("floor", x, floor_f32);
}
Expr ceil(const Expr& x) {
    return on_number("ceil", x, ceil_f32);
}
Expr trunc(const Expr& x) {
    return on_number("trunc", x, trunc_f32);
}
Expr round(const Expr& x) {
    return on_number("round", x, round_f32);
}

}  // namespace kiln
