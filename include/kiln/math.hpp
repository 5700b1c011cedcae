// Transcendental functions over DSL expressions, written once from + - * / fma, comparisons,
// select and bit and integer operations, so every backend computes the same bits
// (docs/numerics.md). kiln::host (host_math.hpp) computes the very same bits on the host.
//
// Each function takes an f32 expression (pow two) and builds a pure expression (a DAG, no
// statements). f16 and bf16 arguments are widened to f32, computed in f32 and rounded back to
// their type once (so the result is within the f32 bound plus half an ulp of the narrow type); a
// number literal is taken as f32; any other dtype is a kiln::Error (the rounding functions return
// an integer unchanged). Bounds are in ulp of the exact result
// (below the normal range, ulp = 2^-149), measured against long double references on every 17th
// f32 bit pattern (Math.DISABLED_Exhaustive) and on tests/math_test.cpp's sweep (which asserts
// them), then rounded up to a half ulp. NaN inputs give a NaN (payload and sign unspecified).
#pragma once

#include "kiln/dsl.hpp"

namespace kiln {

// e^x. Max error 1 ulp (measured 0.843). exp(+-0) = 1; exp(x) = +inf for x >= 0x1.62e430p+6
// (88.7228394), the first f32 whose exp rounds past FLT_MAX; subnormal results are rounded
// correctly from the internal value (one rounding), down to 0 for x <= -103.972077; exp(-inf) = 0,
// exp(+inf) = +inf.
Expr exp(const Expr& x);

// 2^x. Max error 1 ulp (measured 0.869). Exact for integer x in [-149, 127]; +inf for x >= 128;
// subnormal results rounded once, 0 for x <= -150; exp2(-inf) = 0, exp2(+inf) = +inf.
Expr exp2(const Expr& x);

// e^x - 1, accurate near 0. Max error 1.5 ulp (measured 1.131). expm1(+-0) = +-0, expm1(x) = x for
// |x| < 2^-25 (subnormals included); -1 for x <= -17.33 and at -inf; +inf for x >= 88.7228394 and
// at +inf.
Expr expm1(const Expr& x);

// Natural logarithm. Max error 1 ulp (measured 0.815). log(+-0) = -inf, log(x < 0) = NaN (-inf
// included), log(1) = +0, log(+inf) = +inf; subnormal inputs are handled exactly (scaled by 2^23
// first).
Expr log(const Expr& x);

// Base-2 logarithm. Max error 1 ulp (measured 0.957). Exact (integer) for powers of two, subnormal
// ones included; special values as log.
Expr log2(const Expr& x);

// log(1 + x), accurate near 0. Max error 1 ulp (measured 0.802). log1p(+-0) = +-0, log1p(x) = x for
// tiny x, log1p(-1) = -inf, log1p(x < -1) = NaN (-inf included), log1p(+inf) = +inf.
Expr log1p(const Expr& x);

// Hyperbolic tangent, computed as E / (2 + E) with E = expm1(2|x|) and the sign of x.
// Max error 2 ulp (measured 1.500). tanh(+-0) = +-0, tanh(x) = x for tiny x (subnormals included),
// tanh(x) = +-1 for |x| >= 9.02 and at +-inf.
Expr tanh(const Expr& x);

// The logistic function 1 / (1 + e^-x), computed as 1 / (1 + e^-|x|) for x >= 0 and
// e^x / (1 + e^x) for x < 0, so no intermediate overflows. Max error 2 ulp (measured 1.458).
// sigmoid(+-0) = 0.5, sigmoid(+inf) = 1, sigmoid(-inf) = +0; tiny (subnormal) results for x < -87.3
// are kept, 0 for x <= -103.972.
Expr sigmoid(const Expr& x);

// The error function. |x| < 1: x + x * P(x^2); 1 <= |x|: 1 - exp(Q(|x|) - x^2) with Q a fit of
// log(erfc(x)) + x^2 on [1, 4] (|x| clamped to 4). Max error 1 ulp (measured 0.978). erf(+-0) =
// +-0, erf(x) = 2x/sqrt(pi) rounded once for tiny x, erf(x) = +-1 for |x| >= 3.92 and at +-inf.
Expr erf(const Expr& x);

// 1 / sqrt(x), correctly rounded (max error 0.5 ulp): x is scaled exactly into [1, 4), where
// 1/sqrt is corrected once by its fma residual and then rounded by an exact integer test of the
// midpoint; tested on all 2^24 inputs of [1, 4), which decide every input. rsqrt(+0) = +inf,
// rsqrt(-0) = -inf, rsqrt(x < 0) = NaN (-inf included), rsqrt(+inf) = +0.
Expr rsqrt(const Expr& x);

// Sine and cosine, with x reduced exactly (Payne–Hanek) over the whole f32 range, so a large |x|
// is as accurate as a small one. Max error 1 ulp (measured 0.722 for sin, 0.724 for cos, the
// worst at |x| near 2^112). sin(+-0) = +-0, sin(x) = x for tiny x (subnormals included),
// cos(+-0) = 1; +-inf and NaN give NaN.
Expr sin(const Expr& x);
Expr cos(const Expr& x);

// x^y, with C's powf special values: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN; NaN
// otherwise when x or y is NaN; pow(x < 0 finite, y finite non-integer) = NaN; a negative x
// (-0 and -inf included) gives a negative result for an odd integer y; pow(+-0, y < 0) = inf,
// pow(+-0, y > 0) = 0; pow(-1, +-inf) = 1; pow(x, -inf) = inf for |x| < 1 and +0 for |x| > 1,
// pow(x, +inf) the reverse; pow(+-inf, y) = 0 for y < 0 and inf for y > 0. Otherwise
// 2^(y log2|x|) with log2|x| and its product with y carried in two f32s, so the error does not
// grow with |y log2|x||: max error 1 ulp (measured 0.767 on 2^24 pairs whose results cover the
// whole range, subnormals included; tests/math_pow_test.cpp). Overflow gives inf, underflow 0
// (signed). A number literal takes the other operand's type; f16/bf16 compute in f32 and round
// once.
Expr pow(const Expr& x, const Expr& y);

// Rounding to an integer, exactly (the result is the exact integer as a float of x's type).
// floor rounds down, ceil up, trunc toward zero, round to nearest with halfway cases to even
// (as torch.round and C's rint / nearbyint). The sign of a zero result is x's (floor(-0.5) =
// -1, ceil(-0.5) = -0, round(-0.4) = -0); +-inf and NaN are returned as they are. An integer
// argument is returned unchanged.
Expr floor(const Expr& x);
Expr ceil(const Expr& x);
Expr trunc(const Expr& x);
Expr round(const Expr& x);

}  // namespace kiln
