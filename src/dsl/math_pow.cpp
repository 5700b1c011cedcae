// pow(x, y) as a DSL expression: 2^(y log2|x|) with log2|x| and the product carried as hi + lo
// pairs of f32 (about 2^-38 relative), so a large y does not magnify a rounding of log2|x| into
// the result; then 2^t for the pair, rounded once at the end. C's powf special cases are selected
// around it. Polynomials from scripts/math/fit_trig_pow.py.
#include <limits>

#include "dsl/math_internal.hpp"
#include "kiln/math.hpp"

namespace kiln {
namespace {

using namespace math_detail;

// log2(a) for a positive finite a, as hi + lo. a = 2^e (1 + f); log2(1 + f) = (2/ln2) atanh(s)
// with s = f / (2 + f), |s| <= 0.1716, and atanh(s) = s + s^3/3 + s^5 R(s^2)/2 (the fit's
// error relative to atanh is 2^-38.7): s and s^3/3 are carried as pairs, the s^5 term rounded.
Pair log2_pair(const Expr& a) {
    const LogReduced red = reduce_log(a);
    const Expr& f = red.f;
    const Pair d = fast_two_sum(f32(2.0f), f);
    const Expr s_hi = f / d.hi;
    const Expr s_lo = (fma(-s_hi, d.hi, f) - s_hi * d.lo) / d.hi;
    const Expr z = s_hi * s_hi;
    const Expr z_lo = fma(s_hi, s_hi, -z);
    // s^3 = s_hi^3 + 3 s_hi^2 s_lo, then / 3.
    const Expr c3 = z * s_hi;
    const Expr c3_lo = fma(z, s_hi, -c3) + fma(z_lo, s_hi, 3.0f * z * s_lo);
    const Pair third = mul({c3, c3_lo}, {f32(0x1.555556p-2f), f32(-0x1.555556p-27f)});
    const Expr r = horner(z, {0x1.999998p-3f, 0x1.24964cp-3f, 0x1.c487ccp-4f, 0x1.b3b4e4p-4f});
    const Pair atanh_s = fast_two_sum(s_hi, third.hi);
    const Pair sum{atanh_s.hi, atanh_s.lo + (s_lo + fma(c3 * z, r, third.lo))};
    const Pair l = mul(sum, {f32(0x1.715476p+1f), f32(0x1.4ae0cp-25f)});  // 2/ln2
    const Pair total = fast_two_sum(cast(DType::f32, red.e), l.hi);  // |e| >= 1 > |l.hi| or e = 0
    return {total.hi, total.lo + l.lo};
}

// 2^(t.hi + t.lo) for |t.lo| <= 2^-20 |t.hi| or so: 2^t = 2^k 2^r, |r| <= 1/2, and
// 2^r = 1 + r ln2 + r^2 P(r) (the fit's error relative to 2^r is 2^-31.3) with 1 + r ln2 as a pair,
// so only the last addition rounds at the result's scale (and, for subnormal results, scale()).
Expr exp2_pair(const Pair& t) {
    // Past [-152, 129] the result is 0 or inf anyway; clamping drops the tail (NaN stays NaN).
    const Expr hi = min(max(t.hi, -152.0f), 129.0f);
    const Expr lo = select(hi == t.hi, t.lo, 0.0f);
    const Rounded k = round_to_int(hi);
    const Pair r = two_sum(hi - k.f, lo);                                 // hi - k.f is exact
    const Pair a = mul(r, {f32(0x1.62e430p-1f), f32(-0x1.05c610p-29f)});  // ln 2
    const Expr p = horner(r.hi, {0x1.ebfbep-3f, 0x1.c6b06ep-5f, 0x1.3b2a54p-7f, 0x1.5db4a8p-10f,
                                 0x1.4417aap-13f, 0x1.c59ce8p-17f});
    const Pair u = fast_two_sum(f32(1.0f), a.hi);
    return scale(u.hi + (u.lo + fma(r.hi * r.hi, p, a.lo)), k.i);
}

Expr pow_f32(const Expr& x, const Expr& y) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Expr ax = abs(x), ay = abs(y);
    // |x|^y for finite nonzero x and finite y.
    const Pair l = log2_pair(ax);
    const Expr t_hi = y * l.hi;
    const Pair t{t_hi, fma(y, l.hi, -t_hi) + y * l.lo};
    Expr magnitude = exp2_pair(t);
    // x = +-0 or +-inf: 0 or inf by the signs of y and log|x|; y = +-inf likewise, 1 at |x| = 1.
    magnitude = select(ax == 0.0f || ax == inf, select((y < 0.0f) == (ax == 0.0f), f32(inf), 0.0f),
                       magnitude);
    magnitude = select(
        ay == inf, select(ax == 1.0f, f32(1.0f), select((ax < 1.0f) == (y < 0.0f), f32(inf), 0.0f)),
        magnitude);
    // A negative x (-0 and -inf included) gives a negative result for an odd integer y; for a
    // non-integer y and finite x < 0, NaN.
    const Expr y_integer = y - y == 0.0f && cast(DType::f32, cast(DType::i32, y)) == y;
    const Expr y_whole = y - y == 0.0f && (ay >= 0x1p24f || y_integer);  // finite integer
    const Expr y_odd = ay < 0x1p24f && y_integer && (cast(DType::i32, y) & 1) == 1;
    const Expr sign = select(y_odd, bits_of(x) & 0x80000000u, 0u);
    Expr result = f32_from_bits(bits_of(magnitude) | sign);
    result = select(x < 0.0f && ax < inf && !y_whole && ay < inf, f32(nan), result);
    result = select(x != x || y != y, f32(nan), result);
    return select(y == 0.0f || x == 1.0f, f32(1.0f), result);
}

}  // namespace

Expr pow(const Expr& x, const Expr& y) {
    // A number literal takes the other operand's type; both literals: f32.
    Expr a = x, b = y;
    if (a.weak() && !b.weak()) a = cast(b.type(), a);
    if (b.weak() && !a.weak()) b = cast(a.type(), b);
    if (a.weak()) a = cast(DType::f32, a);
    if (b.weak()) b = cast(DType::f32, b);
    if (a.type() != b.type())
        fail("pow: x is {} but y is {}; cast one so both have the same float type", name(a.type()),
             name(b.type()));
    if (!is_float(a.type()))
        fail("pow needs float arguments (f32, f16 or bf16), got {}", name(a.type()));
    if (a.type() == DType::f32) return pow_f32(a, b);
    return cast(a.type(), pow_f32(cast(DType::f32, a), cast(DType::f32, b)));
}

}  // namespace kiln
