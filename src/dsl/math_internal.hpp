// Building blocks shared by the DSL's math functions (math.cpp, math_trig.cpp, math_pow.cpp,
// math_round.cpp): typed constants, Horner evaluation with fma, exact power-of-two scaling and
// the error-free transformations (TwoSum, TwoProd) that carry a value as an unevaluated sum
// hi + lo of two f32s where one f32 is not precise enough.
#pragma once

#include <initializer_list>

#include "kiln/dsl.hpp"

namespace kiln::math_detail {

// An f32 constant.
Expr f32(float v);
// c[0] + x * (c[1] + x * (c[2] + ...)), each step one fma.
Expr horner(const Expr& x, std::initializer_list<float> c);
// 2^k for an i32 k in [-126, 127], built from its bits.
Expr pow2i(const Expr& k);
// p * 2^k for p in [0.7, 1.5] and k in [-152, 129], rounded once: p * 2^(k/2) is exact (normal),
// the second product rounds (to a subnormal, to 0 or to inf as the exact value says).
Expr scale(const Expr& p, const Expr& k);
// copysign(magnitude, sign_of) for a non-negative (or NaN) magnitude.
Expr with_sign_of(const Expr& magnitude, const Expr& sign_of);
// Applies an f32 function to any float argument: f16/bf16 are widened and the result rounded
// back; number literals are f32; other dtypes are an error naming the function.
Expr on_f32(const char* fn, const Expr& x, Expr (*body)(const Expr&));

// Adding it to an f32 |v| < 2^22 rounds v to an integer (ties to even) in the low bits.
inline constexpr float kShifter = 0x1.8p23f;
// v rounded to the nearest integer (ties to even) for |v| < 2^22: as an f32 and as an i32.
struct Rounded {
    Expr f;  // f32
    Expr i;  // i32
};
Rounded round_to_int(const Expr& v);

// x = 2^e m with m in [sqrt(1/2), sqrt(2)), for positive finite x (subnormals scaled first).
struct LogReduced {
    Expr e;  // i32
    Expr f;  // m - 1, exact, in [-0.2929, 0.4143)
};
LogReduced reduce_log(const Expr& x);

// hi + lo, exactly (|lo| at most half an ulp of hi).
struct Pair {
    Expr hi;
    Expr lo;
};
// a + b exactly, for any a and b (Knuth's TwoSum).
Pair two_sum(const Expr& a, const Expr& b);
// a + b exactly, where a is 0 or |a| >= |b| (Dekker's Fast2Sum).
Pair fast_two_sum(const Expr& a, const Expr& b);
// (a.hi + a.lo) * (b.hi + b.lo), with a relative error of about 2^-44: the product of the heads
// exactly (fma), the cross terms rounded, the product of the tails dropped.
Pair mul(const Pair& a, const Pair& b);

}  // namespace kiln::math_detail
