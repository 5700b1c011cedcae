// DSL expression operators: type rules and IR construction. Weak (literal) operands take the
// type of the other operand; any other mismatch is a kiln::Error naming the op and both types.
#include <cmath>
#include <limits>

#include "ir/simplify.hpp"
#include "kiln/dsl.hpp"

namespace kiln {

using ir::BinOp;
using ir::UnOp;

namespace {

// The value a weak literal carries, as a constant of `type`, or an error when it cannot be.
Expr adopt(const Expr& literal, DType type, const char* op) {
    const auto& c = std::get<ir::expr::Const>(literal.node()->node);
    const bool from_float = is_float(literal.type());
    const double v = from_float ? c.f : static_cast<double>(c.i);
    if (type == DType::boolean)
        fail("operator {}: a number literal cannot be used with a bool operand; compare instead",
             op);
    if (is_float(type)) return constant(type, v);
    if (from_float)
        fail("operator {}: float literal {} used with an {} operand; cast explicitly", op, v,
             name(type));
    const int64_t i = c.i;
    if (!holds_integer(type, i))
        fail("operator {}: literal {} does not fit in the {} operand's type", op, i, name(type));
    return Expr(ir::int_const(type, i));
}

// Brings two operands to one type: weak literals adopt the other side's type.
std::pair<Expr, Expr> unify(const Expr& a, const Expr& b, const char* op) {
    if (a.weak() && !b.weak()) return {adopt(a, b.type(), op), b};
    if (b.weak() && !a.weak()) return {a, adopt(b, a.type(), op)};
    if (a.weak() && b.weak() && a.type() != b.type()) {
        if (is_float(a.type()) || is_float(b.type()))  // int literal with float literal
            return {adopt(a, DType::f32, op), adopt(b, DType::f32, op)};
        const DType wide = a.type() == DType::i32 ? b.type() : a.type();  // u32 / i64 win
        return {adopt(a, wide, op), adopt(b, wide, op)};
    }
    if (a.type() != b.type())
        fail("type mismatch in '{}': {} {} {}; cast one operand so both have the same type", op,
             name(a.type()), op, name(b.type()));
    return {a, b};
}

Expr binary(BinOp op, const Expr& x, const Expr& y) {
    auto [a, b] = unify(x, y, ir::name(op));
    const DType t = a.type();
    const bool weak = a.weak() && b.weak();
    const char* opn = ir::name(op);
    switch (op) {
        case BinOp::add:
        case BinOp::sub:
        case BinOp::mul:
        case BinOp::div:
        case BinOp::min:
        case BinOp::max:
            if (t == DType::boolean) fail("operator '{}' needs numbers, got bool operands", opn);
            break;
        case BinOp::rem:
        case BinOp::shl:
        case BinOp::shr:
            if (!is_integer(t)) fail("operator '{}' needs integer operands, got {}", opn, name(t));
            break;
        case BinOp::bit_and:
        case BinOp::bit_or:
        case BinOp::bit_xor:
            if (!is_integer(t) && t != DType::boolean)
                fail("operator '{}' needs integer or bool operands, got {}", opn, name(t));
            break;
        case BinOp::logical_and:
        case BinOp::logical_or:
            if (t != DType::boolean)
                fail("operator '{}' needs bool operands, got {}", opn, name(t));
            break;
        default:
            break;  // comparisons: any matching types
    }
    const DType result = ir::is_comparison(op) ? DType::boolean : t;
    ir::ExprRef node = ir::make(result, ir::expr::Binary{op, a.node(), b.node()});
    // Two literals fold to a literal (exactly, by simplify's rules); anything else is typed.
    if (weak) node = ir::simplify(node);
    return Expr(node, weak && !ir::is_comparison(op) &&
                          std::holds_alternative<ir::expr::Const>(node->node));
}

Expr unary(UnOp op, const Expr& a) {
    const DType t = a.type();
    switch (op) {
        case UnOp::neg:
            if (t == DType::boolean) fail("unary '-' needs a number, got bool");
            break;
        case UnOp::bit_not:
            if (!is_integer(t))
                fail("operator '~' needs an integer, got {}; use ! for bool", name(t));
            break;
        case UnOp::logical_not:
            if (t != DType::boolean) fail("operator '!' needs a bool, got {}", name(t));
            break;
        case UnOp::sqrt:
            if (!is_float(t)) fail("sqrt needs a float (f32, f16, bf16), got {}", name(t));
            break;
        case UnOp::abs:
            if (t == DType::boolean || (is_integer(t) && !is_signed(t)))
                fail("abs needs a float or signed integer, got {}", name(t));
            break;
        case UnOp::exp2_device:
            if (t != DType::f32) fail("device_exp2 needs an f32, got {}", name(t));
            break;
    }
    if (a.weak()) {  // fold literals right here
        const auto& c = std::get<ir::expr::Const>(a.node()->node);
        if (op == UnOp::neg)
            return is_float(t) ? Expr(ir::constant(t, -c.f), true)
                               : Expr(ir::int_const(t, -c.i), true);
    }
    return Expr(ir::make(t, ir::expr::Unary{op, a.node()}));
}

}  // namespace

Expr::Expr(int v) : Expr(ir::int_const(DType::i32, v), true) {}
Expr::Expr(int64_t v) : Expr(ir::int_const(DType::i64, v), true) {}
Expr::Expr(uint32_t v) : Expr(ir::int_const(DType::u32, v), true) {}
Expr::Expr(float v) : Expr(ir::constant(DType::f32, v), true) {}
Expr::Expr(double v) : Expr(ir::constant(DType::f32, v), true) {}

Expr operator+(const Expr& a, const Expr& b) {
    return binary(BinOp::add, a, b);
}
Expr operator-(const Expr& a, const Expr& b) {
    return binary(BinOp::sub, a, b);
}
Expr operator*(const Expr& a, const Expr& b) {
    return binary(BinOp::mul, a, b);
}
Expr operator/(const Expr& a, const Expr& b) {
    return binary(BinOp::div, a, b);
}
Expr operator%(const Expr& a, const Expr& b) {
    return binary(BinOp::rem, a, b);
}
Expr operator-(const Expr& a) {
    return unary(UnOp::neg, a);
}
Expr operator~(const Expr& a) {
    return unary(UnOp::bit_not, a);
}
Expr operator!(const Expr& a) {
    return unary(UnOp::logical_not, a);
}
Expr operator&(const Expr& a, const Expr& b) {
    return binary(BinOp::bit_and, a, b);
}
Expr operator|(const Expr& a, const Expr& b) {
    return binary(BinOp::bit_or, a, b);
}
Expr operator^(const Expr& a, const Expr& b) {
    return binary(BinOp::bit_xor, a, b);
}
Expr operator<<(const Expr& a, const Expr& b) {
    return binary(BinOp::shl, a, b);
}
Expr operator>>(const Expr& a, const Expr& b) {
    return binary(BinOp::shr, a, b);
}
Expr operator==(const Expr& a, const Expr& b) {
    return binary(BinOp::eq, a, b);
}
Expr operator!=(const Expr& a, const Expr& b) {
    return binary(BinOp::ne, a, b);
}
Expr operator<(const Expr& a, const Expr& b) {
    return binary(BinOp::lt, a, b);
}
Expr operator<=(const Expr& a, const Expr& b) {
    return binary(BinOp::le, a, b);
}
Expr operator>(const Expr& a, const Expr& b) {
    return binary(BinOp::gt, a, b);
}
Expr operator>=(const Expr& a, const Expr& b) {
    return binary(BinOp::ge, a, b);
}
Expr operator&&(const Expr& a, const Expr& b) {
    return binary(BinOp::logical_and, a, b);
}
Expr operator||(const Expr& a, const Expr& b) {
    return binary(BinOp::logical_or, a, b);
}
Expr min(const Expr& a, const Expr& b) {
    return binary(BinOp::min, a, b);
}
Expr max(const Expr& a, const Expr& b) {
    return binary(BinOp::max, a, b);
}
Expr sqrt(const Expr& a) {
    return unary(UnOp::sqrt, a);
}
Expr device_exp2(const Expr& a) {
    return unary(UnOp::exp2_device, a);
}

Expr abs(const Expr& a) {
    return unary(UnOp::abs, a);
}

Expr select(const Expr& cond, const Expr& x, const Expr& y) {
    if (cond.type() != DType::boolean)
        fail("select needs a bool condition, got {}; compare it first", name(cond.type()));
    auto [a, b] = unify(x, y, "select");
    return Expr(ir::make(a.type(), ir::expr::Select{cond.node(), a.node(), b.node()}));
}

Expr cast(DType type, const Expr& a) {
    if (a.type() == type && !a.weak()) return a;
    if (a.weak()) {
        const auto& c = std::get<ir::expr::Const>(a.node()->node);
        const double v = is_float(a.type()) ? c.f : static_cast<double>(c.i);
        if (is_float(type)) return constant(type, v);
        if (!is_float(a.type()) && type != DType::boolean) return adopt(a, type, "cast");
    }
    return Expr(ir::make(type, ir::expr::Cast{a.node()}));
}

Expr bitcast(DType type, const Expr& a) {
    const auto word = [](DType t) { return t == DType::u32 || t == DType::i32; };
    if ((is_half(type) && word(a.type()) && !a.weak()) || (is_half(a.type()) && word(type)))
        return Expr(ir::make(type, ir::expr::Bitcast{a.node()}));
    if (is_half(type) || is_half(a.type()) || type == DType::boolean ||
        a.type() == DType::boolean || bits_of(type) != bits_of(a.type()))
        fail(
            "bitcast from {} to {}: needs two non-bool types of the same width other than "
            "f16/bf16",
            name(a.type()), name(type));
    return Expr(ir::make(type, ir::expr::Bitcast{a.node()}));
}

Expr fma(const Expr& x, const Expr& y, const Expr& z) {
    auto [a, b] = unify(x, y, "fma");
    auto [b2, c] = unify(b, z, "fma");
    auto [a2, c2] = unify(a, c, "fma");
    if (!is_float(a2.type())) fail("fma needs float operands, got {}", name(a2.type()));
    return Expr(ir::make(a2.type(), ir::expr::Fma{a2.node(), b2.node(), c2.node()}));
}

Expr dp4a(const Expr& x, const Expr& y, const Expr& z) {
    auto i32 = [](const Expr& e) { return e.weak() ? cast(DType::i32, e) : e; };
    const Expr a = i32(x), b = i32(y), c = i32(z);
    if (a.type() != DType::i32 || b.type() != DType::i32 || c.type() != DType::i32)
        fail("dp4a needs i32 operands (four packed int8 each), got {}, {}, {}", name(a.type()),
             name(b.type()), name(c.type()));
    return Expr(ir::make(DType::i32, ir::expr::Dp4a{a.node(), b.node(), c.node()}));
}

Expr constant(DType type, double value) {
    if (is_float(type)) {
        // Literals round to f32 first; f16/bf16 values round again when they are used.
        const float f = static_cast<float>(value);
        return Expr(ir::constant(type, static_cast<double>(f)));
    }
    if (type == DType::boolean) return Expr(ir::int_const(type, value != 0 ? 1 : 0));
    if (value != std::floor(value) || !std::isfinite(value))
        fail("constant {} is not an integer but the type is {}", value, name(type));
    return Expr(ir::int_const(type, static_cast<int64_t>(value)));
}

Expr bits_of(const Expr& value) {
    if (value.type() != DType::f32) fail("bits_of needs an f32 value, got {}", name(value.type()));
    return bitcast(DType::u32, value);
}

Expr f32_from_bits(const Expr& bits) {
    if (bits.type() != DType::u32 && !bits.weak())
        fail("f32_from_bits needs a u32 value, got {}", name(bits.type()));
    return bitcast(DType::f32, bits.weak() ? cast(DType::u32, bits) : bits);
}

}  // namespace kiln
