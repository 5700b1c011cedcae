// Python's floor division and remainder (// and %) and clamp, composed of existing maps (div,
// floor, comparisons, where, minimum, maximum), so every device gives the oracle's bits.
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

// The floored quotient and its remainder (the divisor's sign). Integers from the truncating
// divide: where the truncated remainder is non-zero and its sign differs from a non-zero
// divisor's, the quotient steps down by one and the divisor is added to the remainder (x / 0 is
// 0 in kiln, so x // 0 == 0 and x % 0 == x). Floats in f32: floor(a / b), a - b * floor(a / b).
QuotientRemainder floor_division(const Tensor& a, const Tensor& b, const char* op) {
    require_numeric_pair(a, b, op);
    const DType t = a.dtype();
    if (is_float(t)) {
        const Tensor af = cast(a, DType::f32), bf = cast(b, DType::f32);
        Tensor q = floor(af / bf);
        return {cast(q, t), cast(af - bf * q, t)};
    }
    Tensor q = a / b;
    Tensor r = a - q * b;
    if (t == DType::u8 || t == DType::u32) return {q, r};
    Tensor step = (r != 0.0) && ((r < 0.0) != (b < 0.0)) && (b != 0.0);
    return {where(step, q - 1.0, q), where(step, r + b, r)};
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
