// Elementwise tensor ops: checked dtypes, numpy broadcasting, C++ numbers as constants.
#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

using graph::MapOp;
using graph::NodeRef;

namespace {

enum class Accepts { any, numeric, floats, boolean };

void check_dtype(MapOp op, DType t, Accepts accepts) {
    const bool ok = accepts == Accepts::any       ? true
                    : accepts == Accepts::numeric ? t != DType::boolean
                    : accepts == Accepts::floats  ? is_float(t)
                                                  : t == DType::boolean;
    if (ok) return;
    const char* expected = accepts == Accepts::numeric  ? "a numeric dtype (not bool)"
                           : accepts == Accepts::floats ? "f32, f16 or bf16"
                                                        : "bool";
    fail("{}: dtype {}; expected {}", graph::name(op), name(t), expected);
}

Tensor unary(MapOp op, const Tensor& x, Accepts accepts) {
    check_dtype(op, x.dtype(), accepts);
    const DType out = op == MapOp::isnan ? DType::boolean : x.dtype();
    return Tensor(graph::map_node(op, out, {x.node()}));
}

Tensor binary(MapOp op, const Tensor& a, const Tensor& b, Accepts accepts) {
    const auto& na = a.node();
    const auto& nb = b.node();
    if (na->dtype != nb->dtype)
        fail("{}: dtypes differ ({} {} and {} {}); cast one first", graph::name(op),
             name(na->dtype), graph::to_string(na->shape), name(nb->dtype),
             graph::to_string(nb->shape));
    check_dtype(op, na->dtype, accepts);
    const DType out = graph::is_comparison(op) ? DType::boolean : na->dtype;
    return Tensor(graph::map_node(op, out, {na, nb}));
}

// A C++ number as a scalar of x's dtype.
Tensor scalar_like(const Tensor& x, double value, MapOp op) {
    return Tensor(graph::constant_node(value, x.dtype(), {}, &x.device(), graph::name(op)));
}

Tensor with_number(MapOp op, const Tensor& a, double b, Accepts accepts) {
    return binary(op, a, scalar_like(a, b, op), accepts);
}
Tensor number_with(MapOp op, double a, const Tensor& b, Accepts accepts) {
    return binary(op, scalar_like(b, a, op), b, accepts);
}

}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) {
    return binary(MapOp::add, a, b, Accepts::numeric);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
    return binary(MapOp::sub, a, b, Accepts::numeric);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
    return binary(MapOp::mul, a, b, Accepts::numeric);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
    return binary(MapOp::div, a, b, Accepts::numeric);
}
Tensor operator+(const Tensor& a, double b) {
    return with_number(MapOp::add, a, b, Accepts::numeric);
}
Tensor operator-(const Tensor& a, double b) {
    return with_number(MapOp::sub, a, b, Accepts::numeric);
}
Tensor operator*(const Tensor& a, double b) {
    return with_number(MapOp::mul, a, b, Accepts::numeric);
}
Tensor operator/(const Tensor& a, double b) {
    return with_number(MapOp::div, a, b, Accepts::numeric);
}
Tensor operator+(double a, const Tensor& b) {
    return number_with(MapOp::add, a, b, Accepts::numeric);
}
Tensor operator-(double a, const Tensor& b) {
    return number_with(MapOp::sub, a, b, Accepts::numeric);
}
Tensor operator*(double a, const Tensor& b) {
    return number_with(MapOp::mul, a, b, Accepts::numeric);
}
Tensor operator/(double a, const Tensor& b) {
    return number_with(MapOp::div, a, b, Accepts::numeric);
}
Tensor operator-(const Tensor& a) {
    return neg(a);
}

Tensor operator==(const Tensor& a, const Tensor& b) {
    return binary(MapOp::eq, a, b, Accepts::any);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
    return binary(MapOp::ne, a, b, Accepts::any);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
    return binary(MapOp::lt, a, b, Accepts::numeric);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
    return binary(MapOp::le, a, b, Accepts::numeric);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
    return binary(MapOp::gt, a, b, Accepts::numeric);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
    return binary(MapOp::ge, a, b, Accepts::numeric);
}
Tensor operator==(const Tensor& a, double b) {
    return with_number(MapOp::eq, a, b, Accepts::any);
}
Tensor operator!=(const Tensor& a, double b) {
    return with_number(MapOp::ne, a, b, Accepts::any);
}
Tensor operator<(const Tensor& a, double b) {
    return with_number(MapOp::lt, a, b, Accepts::numeric);
}
Tensor operator<=(const Tensor& a, double b) {
    return with_number(MapOp::le, a, b, Accepts::numeric);
}
Tensor operator>(const Tensor& a, double b) {
    return with_number(MapOp::gt, a, b, Accepts::numeric);
}
Tensor operator>=(const Tensor& a, double b) {
    return with_number(MapOp::ge, a, b, Accepts::numeric);
}
Tensor operator&&(const Tensor& a, const Tensor& b) {
    return binary(MapOp::logical_and, a, b, Accepts::boolean);
}
Tensor operator||(const Tensor& a, const Tensor& b) {
    return binary(MapOp::logical_or, a, b, Accepts::boolean);
}
Tensor operator!(const Tensor& a) {
    return unary(MapOp::logical_not, a, Accepts::boolean);
}

Tensor neg(const Tensor& x) {
    return unary(MapOp::neg, x, Accepts::numeric);
}
Tensor abs(const Tensor& x) {
    return unary(MapOp::abs, x, Accepts::numeric);
}
Tensor exp(const Tensor& x) {
    return unary(MapOp::exp, x, Accepts::floats);
}
Tensor log(const Tensor& x) {
    return unary(MapOp::log, x, Accepts::floats);
}
Tensor sqrt(const Tensor& x) {
    return unary(MapOp::sqrt, x, Accepts::floats);
}
Tensor rsqrt(const Tensor& x) {
    return unary(MapOp::rsqrt, x, Accepts::floats);
}
Tensor sin(const Tensor& x) {
    return unary(MapOp::sin, x, Accepts::floats);
}
Tensor cos(const Tensor& x) {
    return unary(MapOp::cos, x, Accepts::floats);
}
Tensor tanh(const Tensor& x) {
    return unary(MapOp::tanh, x, Accepts::floats);
}
Tensor erf(const Tensor& x) {
    return unary(MapOp::erf, x, Accepts::floats);
}
Tensor sigmoid(const Tensor& x) {
    return unary(MapOp::sigmoid, x, Accepts::floats);
}
Tensor relu(const Tensor& x) {
    return unary(MapOp::relu, x, Accepts::numeric);
}
Tensor gelu(const Tensor& x, GeluForm form) {
    return unary(form == GeluForm::erf ? MapOp::gelu_erf : MapOp::gelu_tanh, x, Accepts::floats);
}
Tensor silu(const Tensor& x) {
    return unary(MapOp::silu, x, Accepts::floats);
}
Tensor square(const Tensor& x) {
    return unary(MapOp::square, x, Accepts::numeric);
}
Tensor recip(const Tensor& x) {
    return unary(MapOp::recip, x, Accepts::floats);
}
Tensor floor(const Tensor& x) {
    return unary(MapOp::floor, x, Accepts::floats);
}
Tensor ceil(const Tensor& x) {
    return unary(MapOp::ceil, x, Accepts::floats);
}
Tensor round(const Tensor& x) {
    return unary(MapOp::round, x, Accepts::floats);
}
Tensor isnan(const Tensor& x) {
    return unary(MapOp::isnan, x, Accepts::floats);
}
Tensor pow(const Tensor& a, const Tensor& b) {
    return binary(MapOp::pow, a, b, Accepts::floats);
}
Tensor pow(const Tensor& a, double b) {
    return with_number(MapOp::pow, a, b, Accepts::floats);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
    return binary(MapOp::minimum, a, b, Accepts::numeric);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
    return binary(MapOp::maximum, a, b, Accepts::numeric);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    if (cond.dtype() != DType::boolean)
        fail("where: the condition is {} {}; expected bool", name(cond.dtype()),
             graph::to_string(cond.shape()));
    if (a.dtype() != b.dtype())
        fail("where: the branches' dtypes differ ({} {} and {} {}); cast one first",
             name(a.dtype()), graph::to_string(a.shape()), name(b.dtype()),
             graph::to_string(b.shape()));
    return Tensor(graph::map_node(MapOp::where, a.dtype(), {cond.node(), a.node(), b.node()}));
}

Tensor where(const Tensor& cond, const Tensor& a, double b) {
    return where(cond, a, scalar_like(a, b, MapOp::where));
}

Tensor cast(const Tensor& x, DType dtype) {
    if (x.dtype() == dtype) return x;
    return Tensor(graph::map_node(MapOp::cast, dtype, {x.node()}));
}

Tensor Tensor::to(DType dtype) const {
    return cast(*this, dtype);
}

}  // namespace kiln
