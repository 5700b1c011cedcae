// sin and cos as DSL expressions. The argument is reduced exactly over the whole f32 range:
// |x| = (q + r) pi/2 with |r| <= 1/2 from the product of x's 24-bit significand and a 96-bit
// window of 2/pi's bits chosen by x's exponent (Payne–Hanek, in 64-bit integer arithmetic), so
// no |x| loses accuracy; |x| < 0.78125 (below pi/4) is used as it is. The reduced angle is carried
// as hi + lo into minimax polynomials for sin and cos on [-pi/4, pi/4] (scripts/math/
// fit_trig_pow.py), and the quadrant q picks the polynomial and the sign.
#include <cstdint>
#include <limits>

#include "dsl/math_internal.hpp"
#include "kiln/math.hpp"

namespace kiln {
namespace {

using namespace math_detail;

// 2/pi's bits after the binary point, 32 a word, behind one zero word: kTwoOverPi[j] holds
// bits 32j-31 ... 32j (bit i weighs 2^-i).
constexpr uint32_t kTwoOverPi[8] = {0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
                                    0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu};
constexpr float kPiOver2Hi = 0x1.921fb6p+0f;    // pi/2 rounded to f32
constexpr float kPiOver2Lo = -0x1.777a5cp-25f;  // pi/2 - kPiOver2Hi
constexpr float kSmall = 0x1.9p-1f;             // 0.78125: below it the angle is |x| itself

Expr i64(int64_t v) {
    return constant(DType::i64, static_cast<double>(v));
}

// kTwoOverPi[first + j] for j in [0, 4], as an i64 in [0, 2^32).
Expr two_over_pi_word(const Expr& j, int first) {
    Expr w = i64(kTwoOverPi[first]);
    for (int d = 1; d <= 4; ++d) w = select(j == d, i64(kTwoOverPi[first + d]), w);
    return w;
}

// |x| = (q + r) pi/2, q the quadrant (mod 4), |r| <= 1/2, for a = |x| finite with a >= 0.5.
// a = m 2^(E-150) with m its 24-bit significand; a 2/pi = sum over bits i of m b_i 2^(E-150-i),
// where bits i < E-151 contribute multiples of 4 (whole turns) and bits past the 96-bit window
// from i = E-151 less than 2^-70. So (a 2/pi) mod 4 = (m * window) * 2^-94 mod 4, and the 64
// bits of that product from 2^32 up hold q in their top two bits and r in the other 62.
struct TrigReduced {
    Expr q;  // i32 in [0, 3]
    Pair t;  // the angle in [-pi/4, pi/4]
};
TrigReduced reduce_large(const Expr& a) {
    const Expr bits = bits_of(a);
    const Expr exponent = min(max(cast(DType::i32, bits >> 23), 126), 254);
    const Expr m = cast(DType::i64, (bits & 0x007fffffu) | 0x00800000u);
    const Expr n = exponent - 120;  // the window's first bit in kTwoOverPi's concatenation
    const Expr word = n >> 5, shift = cast(DType::i64, 32 - (n & 31));
    const Expr t[4] = {two_over_pi_word(word, 0), two_over_pi_word(word, 1),
                       two_over_pi_word(word, 2), two_over_pi_word(word, 3)};
    auto window_word = [&](int d) {  // bits 32d ... 32d+31 of the window
        return (((t[d] << 32) | t[d + 1]) >> shift) & int64_t{0xffffffff};
    };
    const Expr lo = m * window_word(2);
    const Expr mid = m * window_word(1) + (lo >> 32);
    const Expr hi = m * window_word(0) + (mid >> 32);
    const Expr v = (hi << 32) | (mid & int64_t{0xffffffff});  // (a 2/pi mod 4) * 2^62, wrapped
    const Expr rounded = v + (int64_t{1} << 61);              // to the nearest quadrant
    const Expr quadrant = cast(DType::i32, (rounded >> 62) & 3);
    const Expr fraction = (rounded & ((int64_t{1} << 62) - 1)) - (int64_t{1} << 61);
    // r = fraction 2^-62 as hi + lo (both conversions exact but the last), then r pi/2.
    const Expr f_hi = cast(DType::f32, fraction);
    const Expr f_lo = cast(DType::f32, fraction - cast(DType::i64, f_hi));
    const Pair r{f_hi * 0x1p-62f, f_lo * 0x1p-62f};
    return {quadrant, mul(r, Pair{f32(kPiOver2Hi), f32(kPiOver2Lo)})};
}

TrigReduced reduce_trig(const Expr& a) {
    const TrigReduced large = reduce_large(a);
    const Expr small = a < kSmall;
    return {select(small, 0, large.q),
            {select(small, a, large.t.hi), select(small, 0.0f, large.t.lo)}};
}

// sin(hi + lo) = sin(hi) + lo cos(hi), with sin(hi) = hi + hi^3 S(hi^2) and cos(hi) taken as
// 1 - hi^2/2; the fit's relative error is 2^-32.5.
Expr sin_poly(const Pair& t, const Expr& z) {
    const Expr s = horner(z, {-0x1.555556p-3f, 0x1.111174p-7f, -0x1.a05954p-13f, 0x1.7c2c4ep-19f});
    return t.hi + fma(t.hi * z, s, t.lo * fma(z, -0.5f, 1.0f));
}

// cos(hi + lo) = cos(hi) - lo sin(hi), with cos(hi) = 1 - hi^2/2 + hi^4 C(hi^2): 1 - hi^2/2 is
// carried exactly (hi^2 by fma, the subtraction by Fast2Sum), so only the last addition rounds
// at the result's scale; the fit's relative error is 2^-32.3.
Expr cos_poly(const Pair& t, const Expr& z) {
    const Expr z_lo = fma(t.hi, t.hi, -z);
    const Pair w = fast_two_sum(f32(1.0f), z * -0.5f);
    const Expr c = horner(z, {0x1.555556p-5f, -0x1.6c175ep-10f, 0x1.a0304cp-16f, -0x1.19f04ep-22f});
    return w.hi + (fma(z * z, c, w.lo) - fma(z_lo, 0.5f, t.hi * t.lo));
}

// sin(a) (which_is_cos false) or cos(a) for a = |x|, signed for x: sin is odd, cos even.
Expr sin_or_cos(const Expr& x, bool which_is_cos) {
    const Expr a = abs(x);
    const TrigReduced red = reduce_trig(a);
    const Expr z = red.t.hi * red.t.hi;
    const Expr s = sin_poly(red.t, z), c = cos_poly(red.t, z);
    // sin: q = 0..3 gives S, C, -S, -C; cos: C, -S, -C, S.
    const Expr value = select((red.q & 1) == 0, which_is_cos ? c : s, which_is_cos ? s : c);
    Expr sign = cast(DType::u32, (which_is_cos ? red.q + 1 : red.q) & 2) << 30;
    if (!which_is_cos) sign = sign ^ (bits_of(x) & 0x80000000u);
    const float inf = std::numeric_limits<float>::infinity();
    return select(a < inf, f32_from_bits(bits_of(value) ^ sign), x - x);  // inf, NaN: NaN
}

Expr sin_f32(const Expr& x) {
    return sin_or_cos(x, false);
}
Expr cos_f32(const Expr& x) {
    return sin_or_cos(x, true);
}

}  // namespace

Expr sin(const Expr& x) {
    return on_f32("sin", x, sin_f32);
}
Expr cos(const Expr& x) {
    return on_f32("cos", x, cos_f32);
}

}  // namespace kiln
