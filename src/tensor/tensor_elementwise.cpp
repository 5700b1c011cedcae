// Elementwise tensor ops: checked dtypes, numpy broadcasting, C++ numbers as constants.
#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

using graph::MapOp;
using graph::NodeRef;

namespace {

void check_dtype(MapOp op, DType t) {
    const graph::MapInputs inputs = graph::info(op).inputs;
    const bool ok = inputs == graph::MapInputs::any       ? true
                    : inputs == graph::MapInputs::numeric ? t != DType::boolean
                    : inputs == graph::MapInputs::floats  ? is_float(t)
                                                          : t == DType::boolean;
    if (ok) return;
    const char* expected = inputs == graph::MapInputs::numeric  ? "a numeric dtype (not bool)"
                           : inputs == graph::MapInputs::floats ? "f32, f16 or bf16"
                                                                : "bool";
    fail("{}: dtype {}; expected {}", graph::name(op), name(t), expected);
}

// The result's dtype for operands of dtype t (the table's rule; cast names its own).
DType result_dtype(MapOp op, DType t) {
    return graph::info(op).result == graph::MapResult::boolean ? DType::boolean : t;
}

Tensor unary(MapOp op, const Tensor& x) {
    check_dtype(op, x.dtype());
    return Tensor(graph::map_node(op, result_dtype(op, x.dtype()), {x.node()}));
}

Tensor binary(MapOp op, const Tensor& a, const Tensor& b) {
    const auto& na = a.node();
    const auto& nb = b.node();
    if (na->dtype != nb->dtype)
        fail("{}: dtypes differ ({} {} and {} {}); cast one first", graph::name(op),
             name(na->dtype), graph::to_string(na->shape), name(nb->dtype),
             graph::to_string(nb->shape));
    check_dtype(op, na->dtype);
    return Tensor(graph::map_node(op, result_dtype(op, na->dtype), {na, nb}));
}

// A C++ number as a scalar of x's dtype.
Tensor scalar_like(const Tensor& x, double value, MapOp op) {
    return Tensor(graph::constant_node(value, x.dtype(), {}, &x.device(), graph::name(op)));
}

Tensor with_number(MapOp op, const Tensor& a, double b) {
    return binary(op, a, scalar_like(a, b, op));
}
Tensor number_with(MapOp op, double a, const Tensor& b) {
    return binary(op, scalar_like(b, a, op), b);
}

}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) {
    return binary(MapOp::add, a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
    return binary(MapOp::sub, a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
    return binary(MapOp::mul, a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
    return binary(MapOp::div, a, b);
}
Tensor operator+(const Tensor& a, double b) {
    return with_number(MapOp::add, a, b);
}
Tensor operator-(const Tensor& a, double b) {
    return with_number(MapOp::sub, a, b);
}
Tensor operator*(const Tensor& a, double b) {
    return with_number(MapOp::mul, a, b);
}
Tensor operator/(const Tensor& a, double b) {
    return with_number(MapOp::div, a, b);
}
Tensor operator+(double a, const Tensor& b) {
    return number_with(MapOp::add, a, b);
}
Tensor operator-(double a, const Tensor& b) {
    return number_with(MapOp::sub, a, b);
}
Tensor operator*(double a, const Tensor& b) {
    return number_with(MapOp::mul, a, b);
}
Tensor operator/(double a, const Tensor& b) {
    return number_with(MapOp::div, a, b);
}
Tensor operator-(const Tensor& a) {
    return neg(a);
}

Tensor operator==(const Tensor& a, const Tensor& b) {
    return binary(MapOp::eq, a, b);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
    return binary(MapOp::ne, a, b);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
    return binary(MapOp::lt, a, b);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
    return binary(MapOp::le, a, b);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
    return binary(MapOp::gt, a, b);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
    return binary(MapOp::ge, a, b);
}
Tensor operator==(const Tensor& a, double b) {
    return with_number(MapOp::eq, a, b);
}
Tensor operator!=(const Tensor& a, double b) {
    return with_number(MapOp::ne, a, b);
}
Tensor operator<(const Tensor& a, double b) {
    return with_number(MapOp::lt, a, b);
}
Tensor operator<=(const Tensor& a, double b) {
    return with_number(MapOp::le, a, b);
}
Tensor operator>(const Tensor& a, double b) {
    return with_number(MapOp::gt, a, b);
}
Tensor operator>=(const Tensor& a, double b) {
    return with_number(MapOp::ge, a, b);
}
Tensor operator&&(const Tensor& a, const Tensor& b) {
    return binary(MapOp::logical_and, a, b);
}
Tensor operator||(const Tensor& a, const Tensor& b) {
    return binary(MapOp::logical_or, a, b);
}
Tensor operator!(const Tensor& a) {
    return unary(MapOp::logical_not, a);
}

Tensor neg(const Tensor& x) {
    return unary(MapOp::neg, x);
}
Tensor abs(const Tensor& x) {
    return unary(MapOp::abs, x);
}
Tensor exp(const Tensor& x) {
    return unary(MapOp::exp, x);
}
Tensor log(const Tensor& x) {
    return unary(MapOp::log, x);
}
Tensor sqrt(const Tensor& x) {
    return unary(MapOp::sqrt, x);
}
Tensor rsqrt(const Tensor& x) {
    return unary(MapOp::rsqrt, x);
}
Tensor sin(const Tensor& x) {
    return unary(MapOp::sin, x);
}
Tensor cos(const Tensor& x) {
    return unary(MapOp::cos, x);
}
Tensor tanh(const Tensor& x) {
    return unary(MapOp::tanh, x);
}
Tensor erf(const Tensor& x) {
    return unary(MapOp::erf, x);
}
Tensor sigmoid(const Tensor& x) {
    return unary(MapOp::sigmoid, x);
}
Tensor relu(const Tensor& x) {
    return unary(MapOp::relu, x);
}
Tensor gelu(const Tensor& x, GeluForm form) {
    return unary(form == GeluForm::erf ? MapOp::gelu_erf : MapOp::gelu_tanh, x);
}
Tensor silu(const Tensor& x) {
    return unary(MapOp::silu, x);
}
Tensor square(const Tensor& x) {
    return unary(MapOp::square, x);
}
Tensor recip(const Tensor& x) {
    return unary(MapOp::recip, x);
}
Tensor floor(const Tensor& x) {
    return unary(MapOp::floor, x);
}
Tensor ceil(const Tensor& x) {
    return unary(MapOp::ceil, x);
}
Tensor round(const Tensor& x) {
    return unary(MapOp::round, x);
}
Tensor isnan(const Tensor& x) {
    return unary(MapOp::isnan, x);
}
Tensor pow(const Tensor& a, const Tensor& b) {
    return binary(MapOp::pow, a, b);
}
Tensor pow(const Tensor& a, double b) {
    return with_number(MapOp::pow, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
    return binary(MapOp::minimum, a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
    return binary(MapOp::maximum, a, b);
}
Tensor minimum(const Tensor& a, double b) {
    return with_number(MapOp::minimum, a, b);
}
Tensor maximum(const Tensor& a, double b) {
    return with_number(MapOp::maximum, a, b);
}
Tensor minimum(double a, const Tensor& b) {
    return number_with(MapOp::minimum, a, b);
}
Tensor maximum(double a, const Tensor& b) {
    return number_with(MapOp::maximum, a, b);
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
