// simplify: bottom-up constant folding with exact semantics.
#include "ir/simplify.hpp"

#include <cstring>

#include "ir/visit.hpp"

namespace kiln::ir {
namespace {

// Wraps v to the width and signedness of an integer type.
int64_t wrap(DType t, int64_t v) {
    switch (t) {
        case DType::i8:
            return static_cast<int8_t>(v);
        case DType::u8:
            return static_cast<uint8_t>(v);
        case DType::i32:
            return static_cast<int32_t>(v);
        case DType::u32:
            return static_cast<uint32_t>(v);
        case DType::boolean:
            return v != 0;
        default:
            return v;
    }
}

bool const_of(const ExprRef& e, int64_t& i, double& f) {
    const auto* c = std::get_if<expr::Const>(&e->node);
    if (!c) return false;
    i = c->i;
    f = c->f;
    return true;
}

ExprRef fold_int_binary(const ExprRef& e, const expr::Binary& b) {
    int64_t x, y;
    double fx, fy;
    if (!const_of(b.a, x, fx) || !const_of(b.b, y, fy)) return e;
    const DType t = b.a->type;
    const bool u = !is_signed(t);
    auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    const int width = bits_of(t);
    int64_t r;
    switch (b.op) {
        case BinOp::add:
            r = static_cast<int64_t>(ux + uy);
            break;
        case BinOp::sub:
            r = static_cast<int64_t>(ux - uy);
            break;
        case BinOp::mul:
            r = static_cast<int64_t>(ux * uy);
            break;
        case BinOp::div:
            if (y == 0)
                r = 0;
            else if (!u && y == -1)
                r = static_cast<int64_t>(0 - ux);
            else
                r = u ? static_cast<int64_t>(ux / uy) : x / y;
            break;
        case BinOp::rem:
            if (y == 0)
                r = x;
            else if (!u && y == -1)
                r = 0;
            else
                r = u ? static_cast<int64_t>(ux % uy) : x % y;
            break;
        case BinOp::min:
            r = (u ? ux < uy : x < y) ? x : y;
            break;
        case BinOp::max:
            r = (u ? ux > uy : x > y) ? x : y;
            break;
        case BinOp::bit_and:
            r = x & y;
            break;
        case BinOp::bit_or:
            r = x | y;
            break;
        case BinOp::bit_xor:
            r = x ^ y;
            break;
        case BinOp::shl:
            r = static_cast<int64_t>(ux << (uy & static_cast<uint64_t>(width - 1)));
            break;
        case BinOp::shr:
            r = u ? static_cast<int64_t>(ux >> (uy & static_cast<uint64_t>(width - 1)))
                  : x >> (uy & static_cast<uint64_t>(width - 1));
            break;
        case BinOp::eq:
            return int_const(DType::boolean, x == y);
        case BinOp::ne:
            return int_const(DType::boolean, x != y);
        case BinOp::lt:
            return int_const(DType::boolean, u ? ux < uy : x < y);
        case BinOp::le:
            return int_const(DType::boolean, u ? ux <= uy : x <= y);
        case BinOp::gt:
            return int_const(DType::boolean, u ? ux > uy : x > y);
        case BinOp::ge:
            return int_const(DType::boolean, u ? ux >= uy : x >= y);
        case BinOp::logical_and:
            r = (x != 0) && (y != 0);
            break;
        case BinOp::logical_or:
            r = (x != 0) || (y != 0);
            break;
        default:
            return e;
    }
    return int_const(e->type, wrap(e->type, r));
}

ExprRef fold_f32_binary(const ExprRef& e, const expr::Binary& b) {
    int64_t ix, iy;
    double dx, dy;
    if (!const_of(b.a, ix, dx) || !const_of(b.b, iy, dy)) return e;
    const float x = static_cast<float>(dx), y = static_cast<float>(dy);
    switch (b.op) {
        case BinOp::add:
            return float_const(DType::f32, static_cast<double>(x + y));
        case BinOp::sub:
            return float_const(DType::f32, static_cast<double>(x - y));
        case BinOp::mul:
            return float_const(DType::f32, static_cast<double>(x * y));
        case BinOp::div:
            return float_const(DType::f32, static_cast<double>(x / y));
        case BinOp::lt:
            return int_const(DType::boolean, x < y);
        case BinOp::le:
            return int_const(DType::boolean, x <= y);
        case BinOp::gt:
            return int_const(DType::boolean, x > y);
        case BinOp::ge:
            return int_const(DType::boolean, x >= y);
        case BinOp::eq:
            return int_const(DType::boolean, x == y);
        case BinOp::ne:
            return int_const(DType::boolean, x != y);
        default:
            return e;
    }
}

bool is_int_value(const ExprRef& e, int64_t v) {
    int64_t c;
    return is_const(e, &c) && c == v;
}

bool is_f32_one(const ExprRef& e) {
    const auto* c = std::get_if<expr::Const>(&e->node);
    return c && e->type == DType::f32 && c->f == 1.0;
}

ExprRef step(const ExprRef& e) {
    if (const auto* b = std::get_if<expr::Binary>(&e->node)) {
        const DType t = b->a->type;
        if (is_integer(t) || t == DType::boolean) {
            ExprRef folded = fold_int_binary(e, *b);
            if (folded != e) return folded;
            if (is_integer(t)) {
                if ((b->op == BinOp::add || b->op == BinOp::sub) && is_int_value(b->b, 0))
                    return b->a;
                if (b->op == BinOp::add && is_int_value(b->a, 0)) return b->b;
                if (b->op == BinOp::mul && is_int_value(b->b, 1)) return b->a;
                if (b->op == BinOp::mul && is_int_value(b->a, 1)) return b->b;
            }
        } else if (t == DType::f32) {
            ExprRef folded = fold_f32_binary(e, *b);
            if (folded != e) return folded;
            if (b->op == BinOp::mul && is_f32_one(b->b)) return b->a;
            if (b->op == BinOp::mul && is_f32_one(b->a)) return b->b;
        }
    } else if (const auto* s = std::get_if<expr::Select>(&e->node)) {
        int64_t c;
        if (is_const(s->cond, &c)) return c ? s->a : s->b;
    } else if (const auto* c = std::get_if<expr::Cast>(&e->node)) {
        int64_t v;
        if (is_const(c->a, &v) && (is_integer(e->type) || e->type == DType::boolean))
            return int_const(e->type, wrap(e->type, v));
        if (is_const(c->a, &v) && e->type == DType::f32 && v >= -(1 << 24) && v <= (1 << 24))
            return float_const(DType::f32, static_cast<double>(v));  // exact in f32
    }
    return e;
}

}  // namespace

ExprRef simplify(const ExprRef& e) {
    return rewrite(e, step);
}

Kernel simplify(const Kernel& kernel) {
    Kernel k = kernel;
    k.body = rewrite_exprs(kernel.body, step);
    return k;
}

}  // namespace kiln::ir
