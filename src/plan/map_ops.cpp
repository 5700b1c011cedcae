// Elementwise graph ops and generators in the DSL.
#include "plan/map_ops.hpp"

#include "kiln/error.hpp"
#include "kiln/math.hpp"

namespace kiln::plan {

using graph::MapOp;

namespace {

Expr f32(const Expr& e) {
    return e.type() == DType::f32 ? e : cast(DType::f32, e);
}
Expr narrowed(const Expr& e, DType out) {
    return e.type() == out ? e : cast(out, e);
}
Expr c32(double v) {
    return constant(DType::f32, v);
}

// A float op on f32 values.
Expr float_op(MapOp op, const std::vector<Expr>& a) {
    switch (op) {
        case MapOp::neg:
            return -a[0];
        case MapOp::abs:
            return abs(a[0]);
        case MapOp::exp:
            return exp(a[0]);
        case MapOp::log:
            return log(a[0]);
        case MapOp::sqrt:
            return sqrt(a[0]);
        case MapOp::rsqrt:
            return rsqrt(a[0]);
        case MapOp::sin:
            return sin(a[0]);
        case MapOp::cos:
            return cos(a[0]);
        case MapOp::tanh:
            return tanh(a[0]);
        case MapOp::erf:
            return erf(a[0]);
        case MapOp::sigmoid:
            return sigmoid(a[0]);
        case MapOp::relu:
            return max(a[0], c32(0));
        case MapOp::gelu_erf:
            // (x * 0.5) * (1 + erf(x * sqrt(1/2)))
            return (a[0] * c32(0.5)) * (c32(1) + erf(a[0] * c32(0.70710678118654752)));
        case MapOp::gelu_tanh: {
            // (x * 0.5) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * (x * x * x))))
            const Expr cube = a[0] * a[0] * a[0];
            const Expr inner = c32(0.79788456080286536) * (a[0] + c32(0.044715) * cube);
            return (a[0] * c32(0.5)) * (c32(1) + tanh(inner));
        }
        case MapOp::silu:
            return a[0] * sigmoid(a[0]);
        case MapOp::square:
            return a[0] * a[0];
        case MapOp::recip:
            return c32(1) / a[0];
        case MapOp::floor:
            return floor(a[0]);
        case MapOp::ceil:
            return ceil(a[0]);
        case MapOp::round:
            return round(a[0]);
        case MapOp::add:
            return a[0] + a[1];
        case MapOp::sub:
            return a[0] - a[1];
        case MapOp::mul:
            return a[0] * a[1];
        case MapOp::div:
            return a[0] / a[1];
        case MapOp::pow:
            return pow(a[0], a[1]);
        case MapOp::minimum:
            return min(a[0], a[1]);
        case MapOp::maximum:
            return max(a[0], a[1]);
        default:
            break;
    }
    fail("internal: map {} is not a float op", graph::name(op));
}

// An op on values of one integer (or bool) dtype.
Expr integer_op(MapOp op, const std::vector<Expr>& a) {
    switch (op) {
        case MapOp::neg:
            return -a[0];
        case MapOp::abs:
            return is_signed(a[0].type()) ? abs(a[0]) : a[0];
        case MapOp::relu:
            return max(a[0], Expr(ir::int_const(a[0].type(), 0)));
        case MapOp::square:
            return a[0] * a[0];
        case MapOp::add:
            return a[0] + a[1];
        case MapOp::sub:
            return a[0] - a[1];
        case MapOp::mul:
            return a[0] * a[1];
        case MapOp::div:
            return a[0] / a[1];
        case MapOp::minimum:
            return min(a[0], a[1]);
        case MapOp::maximum:
            return max(a[0], a[1]);
        default:
            break;
    }
    fail("internal: map {} is not an integer op", graph::name(op));
}

}  // namespace

Expr apply_map(MapOp op, const std::vector<Expr>& args, DType out) {
    switch (op) {
        case MapOp::cast:
            return cast(out, args[0]);
        case MapOp::where:
            return select(args[0], args[1], args[2]);
        case MapOp::logical_not:
            return !args[0];
        case MapOp::logical_and:
            return args[0] && args[1];
        case MapOp::logical_or:
            return args[0] || args[1];
        case MapOp::isnan:
            return args[0] != args[0];
        case MapOp::eq:
            return args[0] == args[1];
        case MapOp::ne:
            return args[0] != args[1];
        case MapOp::lt:
            return args[0] < args[1];
        case MapOp::le:
            return args[0] <= args[1];
        case MapOp::gt:
            return args[0] > args[1];
        case MapOp::ge:
            return args[0] >= args[1];
        default:
            break;
    }
    if (!is_float(out)) return integer_op(op, args);
    std::vector<Expr> wide;
    for (const auto& a : args) wide.push_back(f32(a));
    return narrowed(float_op(op, wide), out);
}

namespace {

uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

Expr mix32(const Expr& v) {
    Expr x = v ^ (v >> 16u);
    x = x * 0x7feb352du;
    x = x ^ (x >> 15u);
    x = x * 0x846ca68bu;
    return x ^ (x >> 16u);
}

// Element `linear` of the stream keyed by `key`: mix(lo ^ mix(hi ^ key)).
Expr stream(uint32_t key, const Expr& linear) {
    const Expr lo = cast(DType::u32, linear);
    if (linear.type() == DType::i32) return mix32(lo ^ Expr(mix32(key)));
    const Expr hi = cast(DType::u32, linear >> Expr(int64_t{32}));
    return mix32(lo ^ mix32(hi ^ Expr(key)));
}

// 24 random bits as a float in [0, 1).
Expr unit(const Expr& h) {
    return cast(DType::f32, h >> 8u) * c32(0x1p-24);
}

}  // namespace

uint32_t random_key(uint64_t seed) {
    return mix32(static_cast<uint32_t>(seed) ^
                 mix32(static_cast<uint32_t>(seed >> 32) ^ 0x9e3779b9u));
}

Expr generate(const graph::op::Generate& g, DType out, const Expr& linear) {
    using graph::op::GenerateKind;
    switch (g.kind) {
        case GenerateKind::arange:
            if (is_float(out))
                return narrowed(c32(g.start) + cast(DType::f32, linear) * c32(g.step), out);
            return cast(out, linear) * constant(out, g.step) + constant(out, g.start);
        case GenerateKind::rand:
            return narrowed(unit(stream(random_key(g.seed), linear)), out);
        case GenerateKind::randn: {
            const uint32_t key = random_key(g.seed);
            const Expr h1 = stream(key, linear), h2 = stream(mix32(key ^ 0x85ebca6bu), linear);
            const Expr u1 = cast(DType::f32, (h1 >> 8u) + 1u) * c32(0x1p-24);
            const Expr r = sqrt(c32(-2) * log(u1));
            return narrowed(r * cos(c32(6.2831853071795865) * unit(h2)), out);
        }
    }
    fail("internal: unknown generator");
}

}  // namespace kiln::plan
