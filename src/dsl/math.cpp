// Transcendental functions as DSL expressions: range reduction with split constants, minimax
// polynomials (coefficients fitted for kiln with a Remez exchange, rounded to f32 one at a time
// with the rest refitted) in Horner form with fma, and branch-free special cases via select.
#include "kiln/math.hpp"

#include <limits>

#include "dsl/math_internal.hpp"

namespace kiln {
namespace {

using namespace math_detail;

// --- exp family ---------------------------------------------------------------------------

constexpr float kLn2Hi = 0x1.62e430p-1f;    // ln 2 rounded to f32
constexpr float kLn2Lo = -0x1.05c610p-29f;  // ln 2 - kLn2Hi

// x = k ln2 + r with k = round(x / ln2), |r| <= ln2/2 (plus a hair). |x| must be < ~2^21.
// kLn2Hi has 24 bits and |r| < 1/2, so r_hi = fma(-k, kLn2Hi, x) is exact; r_lo = -k kLn2Lo
// carries the rest, to be added where it rounds least.
struct ExpReduced {
    Expr k;     // i32
    Expr r_hi;  // f32
    Expr r_lo;  // f32, |r_lo| < 2^-21
};
ExpReduced reduce_exp(const Expr& x) {
    const Rounded k = round_to_int(x * 0x1.715476p+0f);
    return {k.i, fma(-k.f, kLn2Hi, x), -k.f * kLn2Lo};
}

// e^r - 1 - r_hi = r_lo + r^2 Q(r) on |r| <= 0.3468, the part of expm1 below r_hi (r_lo reaches
// 2^-22 at large k, so r = r_hi + r_lo feeds the polynomial); Q's fit has relative error 2^-28.2.
Expr expm1_tail(const ExpReduced& red) {
    const Expr r = red.r_hi + red.r_lo;
    const Expr q = horner(r, {0x1p-1f, 0x1.55552cp-3f, 0x1.555502p-5f, 0x1.1155a8p-7f,
                              0x1.6d2e4ap-10f, 0x1.3b8accp-13f});
    return fma(r * r, q, red.r_lo);
}

// e^x for x in [-104, 89] (or NaN, which propagates).
Expr exp_clamped(const Expr& x) {
    const ExpReduced red = reduce_exp(x);
    return scale(1.0f + (red.r_hi + expm1_tail(red)), red.k);
}

Expr exp_f32(const Expr& x) {
    return exp_clamped(min(max(x, -104.0f), 89.0f));  // min/max keep a NaN x
}

Expr exp2_f32(const Expr& x) {
    const Expr xc = min(max(x, -152.0f), 129.0f);
    const Rounded k = round_to_int(xc);
    const Expr r = xc - k.f;  // exact, |r| <= 1/2
    // 2^r = 1 + r P(r); relative error of the fit 2^-27.5.
    const Expr p = horner(r, {0x1.62e432p-1f, 0x1.ebfbe6p-3f, 0x1.c6ada8p-5f, 0x1.3b21cap-7f,
                              0x1.5fbcd2p-10f, 0x1.4bdd14p-13f});
    return scale(fma(p, r, 1.0f), k.i);
}

// e^x - 1 = 2^k (1 + r_hi + w) - 1 = 2 * (s w + (s (1 + r_hi) - 1/2)) with s = 2^(k-1) and
// w = expm1_tail: the halving keeps s finite at k = 128, the doubling is exact, and for k = 0 the
// inner part is exact, so there the result is r_hi + w rounded once.
Expr expm1_f32(const Expr& x) {
    const ExpReduced red = reduce_exp(min(max(x, -86.0f), 89.0f));
    const Expr s = pow2i(red.k - 1);
    const Expr big = fma(s, expm1_tail(red), fma(s, red.r_hi, s - 0.5f)) * 2.0f;
    // |x| < 2^-25: the result rounds to x (this also keeps -0 and subnormals exact).
    return select(abs(x) < 0x1p-25f, x, big);
}

// --- log family ---------------------------------------------------------------------------

// log(1 + f) - f - t = f^2 P(f) on [-0.2929, 0.4143), plus a small t; relative error of the
// fit 2^-30.
Expr log1p_tail(const Expr& f, const Expr& t) {
    const Expr p = horner(
        f, {-0x1p-1f, 0x1.555544p-2f, -0x1.ffffep-3f, 0x1.99a626p-3f, -0x1.55664cp-3f,
            0x1.2327c2p-3f, -0x1.fadcd4p-4f, 0x1.e6727cp-4f, -0x1.e4967ap-4f, 0x1.1c970ep-4f});
    return fma(f * f, p, t);
}

// e ln2 + log(1 + f) + c (c tiny), with the small terms summed first so only two roundings
// happen at the result's scale.
Expr log_assemble(const Expr& e, const Expr& f, const Expr& c) {
    const Expr ef = cast(DType::f32, e);
    return fma(ef, kLn2Hi, f + log1p_tail(f, fma(ef, kLn2Lo, c)));
}

// The value at inputs outside (lo, +inf): -inf at lo, NaN below it, x itself at +inf or NaN.
Expr log_special(const Expr& x, float lo) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return select(x == lo, f32(-inf), select(x < lo, f32(nan), x));
}

Expr log_f32(const Expr& x) {
    const LogReduced red = reduce_log(x);
    const Expr finite_positive = bits_of(x) - 1 < 0x7f7fffff;
    return select(finite_positive, log_assemble(red.e, red.f, f32(0.0f)), log_special(x, 0.0f));
}

Expr log2_f32(const Expr& x) {
    const LogReduced red = reduce_log(x);
    const Expr& f = red.f;
    // log2(1 + f) = f log2(e) + f^2 P(f); relative error of the fit 2^-29.9. f log2(e) is
    // carried as f * hi + f * lo so the constant's rounding does not show.
    const Expr p = horner(
        f, {-0x1.715476p-1f, 0x1.ec7086p-2f, -0x1.7154d6p-2f, 0x1.277fcap-2f, -0x1.ec6194p-3f,
            0x1.a3ecbcp-3f, -0x1.6fe774p-3f, 0x1.61f11ap-3f, -0x1.5296bap-3f, 0x1.74b7a2p-4f});
    const Expr l = fma(f, 0x1.715476p+0f, fma(f, 0x1.4ae0c0p-26f, (f * f) * p));
    const Expr finite_positive = bits_of(x) - 1 < 0x7f7fffff;
    return select(finite_positive, cast(DType::f32, red.e) + l, log_special(x, 0.0f));
}

// u = 1 + x rounded; log1p(x) = log(u) + c/u with c = (1 + x) - u exactly (Fast2Sum). When
// u's exponent is 0, x itself is in the kernel's range and is used directly (exact).
Expr log1p_f32(const Expr& x) {
    const Expr u = 1.0f + x;
    const LogReduced red = reduce_log(u);
    const Expr small = x + log1p_tail(x, f32(-0.0f));  // -0.0 keeps log1p(-0) = -0
    const Expr c = select(x > 1.0f, 1.0f - (u - x), x - (u - 1.0f));
    const Expr large = log_assemble(red.e, red.f, c / u);
    const float inf = std::numeric_limits<float>::infinity();
    const Expr in_domain = x > -1.0f && x < inf;
    return select(in_domain, select(red.e == 0, small, large), log_special(x, -1.0f));
}

// n / (a + b): a + b is carried exactly as d + err (TwoSum), and the rounded quotient gets one
// correction from its exact residual, so the sum's rounding does not show.
Expr div_by_sum(const Expr& n, const Expr& a, const Expr& b) {
    const Pair d = two_sum(a, b);
    const Expr q = n / d.hi;
    return q + (fma(-q, d.hi, n) - q * d.lo) / d.hi;
}

// --- built on exp -------------------------------------------------------------------------

Expr tanh_f32(const Expr& x) {
    // tanh(a) = E / (2 + E) with E = expm1(2a) >= 0, so E's error is damped, not amplified;
    // tanh(a) rounds to 1 from a = 9.02, so a is clamped to 10 (min keeps a NaN).
    const Expr em = expm1_f32(2.0f * min(abs(x), 10.0f));
    return with_sign_of(div_by_sum(em, f32(2.0f), em), x);
}

Expr sigmoid_f32(const Expr& x) {
    const Expr e = exp_f32(-abs(x));  // in (0, 1]
    return div_by_sum(select(x < 0.0f, e, f32(1.0f)), f32(1.0f), e);
}

Expr erf_f32(const Expr& x) {
    const Expr a = abs(x);
    // |x| < 1: erf(a) = a + a P(a^2); relative error of the fit 2^-29.4.
    const Expr z = a * a;
    const Expr small =
        fma(a,
            horner(z, {0x1.06eba8p-3f, -0x1.81273ep-2f, 0x1.ce2ce6p-4f, -0x1.b7f71ap-6f,
                       0x1.53f224p-8f, -0x1.a3515ep-11f, 0x1.4771fep-14f}),
            a);
    // 1 <= |x|: erfc(a) = exp(Q(a) - a^2), Q fitted on [1, 4] with the error weighted by
    // erfc/erf (weighted error 2^-35.4); past 4 the result is 1 in f32.
    const Expr ac = min(a, 4.0f);
    const Expr q = horner(ac, {0x1.8b3f34p-13f, -0x1.212c2cp+0f, 0x1.779612p-2f, -0x1.bc1884p-4f,
                               0x1.9d0af2p-6f, -0x1.13978ep-8f, 0x1.cee652p-12f, -0x1.6c00b4p-16f});
    const Expr large = 1.0f - exp_clamped(fma(-ac, ac, q));
    return with_sign_of(select(a < 1.0f, small, large), x);
}

}  // namespace

Expr exp(const Expr& x) {
    return on_f32("exp", x, exp_f32);
}
Expr exp2(const Expr& x) {
    return on_f32("exp2", x, exp2_f32);
}
Expr expm1(const Expr& x) {
    return on_f32("expm1", x, expm1_f32);
}
Expr log(const Expr& x) {
    return on_f32("log", x, log_f32);
}
Expr log2(const Expr& x) {
    return on_f32("log2", x, log2_f32);
}
Expr log1p(const Expr& x) {
    return on_f32("log1p", x, log1p_f32);
}
Expr tanh(const Expr& x) {
    return on_f32("tanh", x, tanh_f32);
}
Expr sigmoid(const Expr& x) {
    return on_f32("sigmoid", x, sigmoid_f32);
}
Expr erf(const Expr& x) {
    return on_f32("erf", x, erf_f32);
}

}  // namespace kiln
