// Transcendental functions over DSL expressions, written once from + - * / fma, comparisons,
// select and bit operations, so every backend computes the same bits (DESIGN.md, numerical law).
//
// Each function takes an f32 expression and builds a pure expression (a DAG, no statements).
// f16 and bf16 arguments are widened to f32, computed in f32 and rounded back to their type once
// (so the result is within the f32 bound plus half an ulp of the narrow type); a number literal
// is taken as f32; any other dtype is a kiln::Error. Bounds are in ulp of the exact result
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

}  // namespace kiln
