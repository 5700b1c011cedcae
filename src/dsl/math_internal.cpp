// The shared building blocks of the DSL's math functions (math_internal.hpp).
#include "dsl/math_internal.hpp"

namespace kiln::math_detail {

Expr f32(float v) {
    return constant(DType::f32, v);
}

Expr horner(const Expr& x, std::initializer_list<float> c) {
    const float* p = c.end();
    Expr acc = f32(*--p);
    while (p != c.begin()) acc = fma(acc, x, f32(*--p));
    return acc;
}

Expr pow2i(const Expr& k) {
    return bitcast(DType::f32, (k + 127) << 23);
}

Expr scale(const Expr& p, const Expr& k) {
    const Expr k1 = k >> 1;
    return p * pow2i(k1) * pow2i(k - k1);
}

Expr with_sign_of(const Expr& magnitude, const Expr& sign_of) {
    return f32_from_bits(bits_of(magnitude) | (bits_of(sign_of) & int64_t{0x80000000}));
}

Expr on_f32(const char* fn, const Expr& x, Expr (*body)(const Expr&)) {
    if (x.weak()) return body(cast(DType::f32, x));
    if (x.type() == DType::f32) return body(x);
    if (is_half(x.type())) return cast(x.type(), body(cast(DType::f32, x)));
    fail("{} needs a float argument (f32, f16 or bf16), got {}", fn, name(x.type()));
}

Rounded round_to_int(const Expr& v) {
    const Expr t = v + kShifter;
    return {t - kShifter, bitcast(DType::i32, t) - bitcast(DType::i32, f32(kShifter))};
}

LogReduced reduce_log(const Expr& x) {
    const Expr sub = bits_of(x) < 0x00800000;
    const Expr xs = select(sub, x * 0x1p23f, x);
    const Expr t = bitcast(DType::i32, xs) - 0x3f3504f3;  // bits of sqrt(1/2)
    const Expr e = (t >> 23) - select(sub, 23, 0);
    const Expr m = bitcast(DType::f32, (t & 0x007fffff) + 0x3f3504f3);
    return {e, m - 1.0f};
}

Pair two_sum(const Expr& a, const Expr& b) {
    const Expr s = a + b;
    const Expr bv = s - a;
    return {s, (a - (s - bv)) + (b - bv)};
}

Pair fast_two_sum(const Expr& a, const Expr& b) {
    const Expr s = a + b;
    return {s, b - (s - a)};
}

Pair mul(const Pair& a, const Pair& b) {
    const Expr hi = a.hi * b.hi;
    return {hi, fma(a.hi, b.hi, -hi) + (a.hi * b.lo + a.lo * b.hi)};
}

}  // namespace kiln::math_detail
