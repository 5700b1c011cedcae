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

// Whether a and b are the same value in every evaluation: one node, or the same leaf.
bool same_value(const ExprRef& a, const ExprRef& b) {
    if (a == b) return true;
    if (a->type != b->type) return false;
    const auto* la = std::get_if<expr::Local>(&a->node);
    const auto* lb = std::get_if<expr::Local>(&b->node);
    if (la && lb) return la->id == lb->id;
    const auto* ba = std::get_if<expr::Builtin>(&a->node);
    const auto* bb = std::get_if<expr::Builtin>(&b->node);
    return ba && bb && ba->which == bb->which;
}

// Exact identities of integer arithmetic (wrapping, and kiln's division rules).
ExprRef int_identity(const ExprRef& e, const expr::Binary& b) {
    int64_t c = 0;
    const bool rc = is_const(b.b, &c);
    switch (b.op) {
        case BinOp::add:
            if (rc && c == 0) return b.a;
            if (is_int_value(b.a, 0)) return b.b;
            // (x + c1) + c2 = x + (c1 + c2): wrapping addition is associative.
            if (const auto* inner = std::get_if<expr::Binary>(&b.a->node); rc && inner) {
                if (inner->op == BinOp::add && is_const(inner->b)) {
                    ExprRef sum = make(e->type, expr::Binary{BinOp::add, inner->b, b.b});
                    sum = fold_int_binary(sum, std::get<expr::Binary>(sum->node));
                    return make(e->type, expr::Binary{BinOp::add, inner->a, sum});
                }
            }
            break;
        case BinOp::sub:
            if (rc && c == 0) return b.a;
            if (same_value(b.a, b.b)) return int_const(e->type, 0);
            break;
        case BinOp::mul:
            if (rc && c == 1) return b.a;
            if (is_int_value(b.a, 1)) return b.b;
            if ((rc && c == 0) || is_int_value(b.a, 0)) return int_const(e->type, 0);
            break;
        case BinOp::div:
            if (rc && c == 1) return b.a;
            break;
        case BinOp::rem:
            if (rc && c == 1) return int_const(e->type, 0);
            break;
        case BinOp::shl:
        case BinOp::shr:
            if (rc && c == 0) return b.a;
            break;
        default:
            break;
    }
    return e;
}

// thread_index / c, % c, & m and >> s where the thread index, below block_size, is known to
// pass through or vanish (block_size 0: not known).
ExprRef thread_index_range(const ExprRef& e, const expr::Binary& b, int block_size) {
    const auto* t = std::get_if<expr::Builtin>(&b.a->node);
    int64_t c = 0;
    if (block_size <= 0 || !t || t->which != BuiltinKind::thread_index || !is_const(b.b, &c))
        return e;
    const int64_t top = block_size - 1;  // the largest thread index
    switch (b.op) {
        case BinOp::div:
            return c > top ? int_const(e->type, 0) : e;
        case BinOp::rem:
            return c > top ? b.a : e;
        case BinOp::bit_and:
            return c >= 0 && (top & ~c) == 0 ? b.a : e;
        case BinOp::shr:
            return c >= 0 && c < 31 && (top >> c) == 0 ? int_const(e->type, 0) : e;
        default:
            return e;
    }
}

ExprRef step(const ExprRef& e, int block_size) {
    if (const auto* b = std::get_if<expr::Binary>(&e->node)) {
        if (ExprRef r = thread_index_range(e, *b, block_size); r != e) return r;
        const DType t = b->a->type;
        if (is_integer(t) || t == DType::boolean) {
            ExprRef folded = fold_int_binary(e, *b);
            if (folded != e) return folded;
            if (is_integer(t)) return int_identity(e, *b);
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
    return rewrite(e, [](const ExprRef& x) { return step(x, 0); });
}

namespace {

// By local id: the constant a local always holds, where one Let of a constant is all that ever
// gives it a value (null otherwise).
std::vector<ExprRef> constant_locals(const Kernel& k) {
    std::vector<int> defs(k.locals.size(), 0);
    std::vector<ExprRef> value(k.locals.size());
    auto def = [&](int l, const ExprRef& v) {
        ++defs[static_cast<size_t>(l)];
        value[static_cast<size_t>(l)] = v && is_const(v) ? v : nullptr;
    };
    for_each_stmt(k.body, [&](const StmtNode& n) {
        std::visit(
            [&](const auto& x) {
                using N = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<N, stmt::Let>) {
                    def(x.local, x.value);
                } else if constexpr (std::is_same_v<N, stmt::Assign> ||
                                     std::is_same_v<N, stmt::For>) {
                    def(x.local, nullptr);
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    for (int l : x.locals) def(l, nullptr);
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    for (int l : x.acc) def(l, nullptr);
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    for (int l : x.locals) def(l, nullptr);
                } else if constexpr (std::is_same_v<N, stmt::Fold>) {
                    def(x.result, nullptr);
                    def(x.index, nullptr);
                }
            },
            n.node);
    });
    for (size_t l = 0; l < value.size(); ++l)
        if (defs[l] != 1) value[l] = nullptr;
    return value;
}

}  // namespace

Kernel simplify(const Kernel& kernel) {
    Kernel k = kernel;
    const std::vector<ExprRef> constants = constant_locals(kernel);
    k.body = rewrite_exprs(kernel.body, [&](const ExprRef& x) {
        if (const auto* l = std::get_if<expr::Local>(&x->node))
            if (const ExprRef& c = constants[static_cast<size_t>(l->id)]) return c;
        return step(x, k.block_size);
    });
    return k;
}

}  // namespace kiln::ir
