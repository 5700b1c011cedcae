// Python's floor division and remainder (// and %) and clamp, composed of existing maps
// (arithmetic, floor, comparisons, where, minimum, maximum), so every device gives the oracle's
// bits.
#include <utility>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

// A C++ number as a scalar of `like`'s dtype, named by `op` when the dtype cannot hold it.
Tensor number(double value, const Tensor& like, const char* op) {
    return Tensor(graph::constant_node(value, like.dtype(), {}, &like.device(), op));
}

void require_numeric_pair(const Tensor& a, const Tensor& b, const char* op) {
    if (a.dtype() != b.dtype())
        fail("{}: dtypes differ ({} {} and {} {}); cast one first", op, name(a.dtype()),
             graph::to_string(a.shape()), name(b.dtype()), graph::to_string(b.shape()));
    if (a.dtype() == DType::boolean)
        fail("{}: dtype bool {}; expected a numeric dtype", op, graph::to_string(a.shape()));
}

struct QuotientRemainder {
    Tensor quotient, remainder;
};

// The quotient one lower and the divisor added where the remainder is non-zero and its sign
// differs from a non-zero divisor's: the remainder then has the divisor's sign.
QuotientRemainder toward_divisor_sign(const Tensor& q, const Tensor& r, const Tensor& b) {
    const Tensor step = (r != 0.0) && ((r < 0.0) != (b < 0.0)) && (b != 0.0);
    return {where(step, q - 1.0, q), where(step, r + b, r)};
}

// Veltkamp's split of f32 x into hi + lo of at most 12 significant bits each, so that the
// product of two halves is exact in f32; `scale` (a power of two, or none) keeps 4097 * x finite.
std::pair<Tensor, Tensor> halves(const Tensor& x, const Tensor* scale) {
    const Tensor xs = scale ? x * *scale : x;
    const Tensor c = xs * 4097.0;
    const Tensor hi = c - (c - xs);
    const Tensor lo = xs - hi;
    if (!scale) return {hi, lo};
    return {hi / *scale, lo / *scale};
}

// a - b * q for f32 tensors, exact before its one rounding (Dekker's product: p = b * q rounded
// and e = b * q - p from the halves; a - p is exact by Sterbenz's lemma, q being a's floored
// quotient) where |q| < 2^22 and nothing overflowed; elsewhere NaN or inexact.
Tensor exact_residual(const Tensor& a, const Tensor& b, const Tensor& q) {
    const Tensor small = Tensor::full({}, 0x1p-30, DType::f32, b.device());
    const Tensor scale = where(abs(b) > 0x1p100, small, 1.0);  // 4097 * b overflows past 2^116
    const auto [bh, bl] = halves(b, &scale);
    const auto [qh, ql] = halves(q, nullptr);
    const Tensor p = b * q;
    const Tensor e = (((bh * qh - p) + bh * ql) + bl * qh) + bl * ql;
    return (a - p) - e;
}

// The floored quotient and its remainder with the divisor's sign. Integers from the truncating
// divide (x / 0 is 0 in kiln, so x // 0 == 0 and x % 0 == x). Floats in f32: q = floor(a / b) and
// r = a - b * q, exact before rounding while |q| < 2^22 (numpy's values there), rounded from the
// rounded product beyond; then one step toward the divisor's sign.
QuotientRemainder floor_division(const Tensor& a, const Tensor& b, const char* op) {
    require_numeric_pair(a, b, op);
    const DType t = a.dtype();
    if (is_float(t)) {
        const Tensor af = cast(a, DType::f32), bf = cast(b, DType::f32);
        const Tensor q = floor(af / bf);
        const Tensor exact = exact_residual(af, bf, q);
        const Tensor r = where((abs(q) < 0x1p22) && !isnan(exact), exact, af - bf * q);
        const auto [fq, fr] = toward_divisor_sign(q, r, bf);
        return {cast(fq, t), cast(fr, t)};
    }
    const Tensor q = a / b;
    const Tensor r = a - q * b;
    if (t == DType::u8 || t == DType::u32) return {q, r};
    return toward_divisor_sign(q, r, b);
}

}  // namespace

Tensor floor_divide(const Tensor& a, const Tensor& b) {
    return floor_division(a, b, "floor_divide").quotient;
}
Tensor floor_divide(const Tensor& a, double b) {
    return floor_divide(a, number(b, a, "floor_divide"));
}
Tensor floor_divide(double a, const Tensor& b) {
    return floor_divide(number(a, b, "floor_divide"), b);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
    return floor_division(a, b, "remainder").remainder;
}
Tensor remainder(const Tensor& a, double b) {
    return remainder(a, number(b, a, "remainder"));
}
Tensor remainder(double a, const Tensor& b) {
    return remainder(number(a, b, "remainder"), b);
}
Tensor operator%(const Tensor& a, const Tensor& b) {
    return remainder(a, b);
}
Tensor operator%(const Tensor& a, double b) {
    return remainder(a, b);
}
Tensor operator%(double a, const Tensor& b) {
    return remainder(a, b);
}

Tensor clamp(const Tensor& x, const Tensor* lo, const Tensor* hi) {
    if (!lo && !hi) fail("clamp: neither a lower nor an upper bound; expected at least one");
    for (const Tensor* bound : {lo, hi})
        if (bound && bound->dtype() != x.dtype())
            fail("clamp: x is {} {} and its {} bound {} {}; expected one dtype", name(x.dtype()),
                 graph::to_string(x.shape()), bound == lo ? "lower" : "upper", name(bound->dtype()),
                 graph::to_string(bound->shape()));
    if (x.dtype() == DType::boolean)
        fail("clamp: dtype bool {}; expected a numeric dtype", graph::to_string(x.shape()));
    Tensor y = x;
    if (lo) y = maximum(y, *lo);
    if (hi) y = minimum(y, *hi);
    return y;
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
    std::optional<Tensor> l, h;
    if (lo) l = number(*lo, x, "clamp");
    if (hi) h = number(*hi, x, "clamp");
    return clamp(x, l ? &*l : nullptr, h ? &*h : nullptr);
}

}  // namespace kiln
