// Emitter, expressions: values of f16/bf16 travel as their 16 bits and every operation on them is
// computed in f32 and rounded back; integer arithmetic is written through unsigned types so it
// wraps on every compiler; division and remainder by a variable, shifts and float->int casts go
// through the functions of scalar_semantics.h (division by a constant other than 0 and -1 is the
// language's own, which means the same there). Expression nodes used more than once in a
// statement are named once (const temporaries), unless they read memory.
#include <fmt/format.h>

#include <cmath>

#include "codegen/c_types.hpp"
#include "codegen/checked_access.hpp"
#include "codegen/emitter.hpp"
#include "ir/shared_nodes.hpp"
#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

namespace {

std::string suffix(DType t) {
    return std::string(name(t));
}

// Whether b is a constant divisor for which C's / and % mean what kiln's do: not 0, and not -1
// of a signed type (MIN / -1).
bool plain_divisor(DType t, const ExprRef& b) {
    int64_t c = 0;
    return is_const(b, &c) && c != 0 && !(is_signed(t) && c == -1);
}

// Where e is the f32 value x as `half` bits widened to u32 (bitcast(u32, cast(half, x))), x.
const ExprRef* half_bits_of_f32(const ExprRef& e, DType half) {
    const auto* bits = std::get_if<expr::Bitcast>(&e->node);
    if (e->type != DType::u32 || !bits || bits->a->type != half) return nullptr;
    const auto* narrowed = std::get_if<expr::Cast>(&bits->a->node);
    if (!narrowed || narrowed->a->type != DType::f32) return nullptr;
    return &narrowed->a;
}

// Whether e is a float constant other than NaN (min and max then take their one-compare form).
bool known_not_nan(const ExprRef& e) {
    const auto* c = std::get_if<expr::Const>(&e->node);
    return c && is_float(e->type) && !std::isnan(c->f);
}

// Whether e is a float constant +0 or -0.
bool known_zero(const ExprRef& e) {
    const auto* c = std::get_if<expr::Const>(&e->node);
    return c && is_float(e->type) && c->f == 0;
}

}  // namespace

std::string widen(DType t, const std::string& v) {
    if (t == DType::f16) return "kiln_f16_to_f32(" + v + ")";
    if (t == DType::bf16) return "kiln_bf16_to_f32(" + v + ")";
    return v;
}

std::string Emitter::narrow(DType t, const std::string& v) const {
    if (t != DType::f16 && t != DType::bf16) return v;
    const std::string& hardware = t == DType::f16 ? d.f32_to_f16 : d.f32_to_bf16;
    return (hardware.empty() ? "kiln_f32_to_" + suffix(t) : hardware) + "(" + v + ")";
}

std::string Emitter::param_name(int i) const {
    return "p_" + k.params.at(static_cast<size_t>(i)).name;
}

std::string Emitter::local(int id) const {
    if (plan && plan->local_home.at(static_cast<size_t>(id)) == Home::per_thread) {
        if (!in_thread_loop)
            fail("kernel {}: per-thread local {} read outside a thread loop", k.name, id);
        return fmt::format("v{}[{}]", id, thread_slot());
    }
    return fmt::format("v{}", id);
}

std::string Emitter::thread_slot() const {
    return plan->strips ? "kiln_l" : "kiln_t";
}

std::string Emitter::mem(MemRef m) const {
    if (m.space == MemSpace::global) return param_name(m.id);
    if (m.space == MemSpace::shared) return fmt::format("sh{}", m.id);
    if (plan && plan->array_home.at(static_cast<size_t>(m.id)) == Home::per_thread) {
        if (!in_thread_loop)
            fail("kernel {}: per-thread array {} used outside a thread loop", k.name, m.id);
        return fmt::format("la{}[{}]", m.id, thread_slot());
    }
    return fmt::format("la{}", m.id);
}

// The cache hint accesses to `m` are written with on this dialect (normal where it has none).
CacheHint Emitter::hint(MemRef m) const {
    if (m.space != MemSpace::global) return CacheHint::normal;
    const CacheHint h = k.params.at(static_cast<size_t>(m.id)).cache;
    const bool written = (h == CacheHint::streaming && !d.streaming_load.empty()) ||
                         (h == CacheHint::keep && !d.keep_load.empty());
    return written ? h : CacheHint::normal;
}

// Whether stores to `m` take the dialect's streaming form.
bool Emitter::streamed(MemRef m) const {
    return hint(m) == CacheHint::streaming;
}

// A load from `address` (a pointer into m), with m's cache hint.
std::string Emitter::load_at(MemRef m, const std::string& address) const {
    switch (hint(m)) {
        case CacheHint::streaming:
            return fmt::format(fmt::runtime(d.streaming_load), address);
        case CacheHint::keep:
            return fmt::format(fmt::runtime(d.keep_load), address);
        case CacheHint::normal:
            break;
    }
    return "*" + address;
}

// A load of `element` (an lvalue of m, e.g. "p_x[i]"), with m's cache hint.
std::string Emitter::hinted_load(MemRef m, const std::string& element) const {
    return hint(m) == CacheHint::normal ? element : load_at(m, "&" + element);
}

std::string Emitter::cast(DType to, DType from, const std::string& v) const {
    if (to == from) return v;
    if (to == DType::boolean) {
        if (is_float(from)) return "(" + widen(from, v) + " != 0.0f)";
        return "(" + v + " != 0)";
    }
    if (from == DType::boolean) {
        if (is_float(to)) return narrow(to, "(" + v + " ? 1.0f : 0.0f)");
        return fmt::format("(({})({} ? 1 : 0))", c_type(to), v);
    }
    if (is_float(from) && is_float(to)) return narrow(to, widen(from, v));
    if (is_float(from)) return fmt::format("kiln_f32_to_{}({})", suffix(to), widen(from, v));
    if (is_float(to)) return narrow(to, "((float)" + v + ")");
    return fmt::format("(({}){})", c_type(to), v);
}

std::string Emitter::builtin(BuiltinKind b) const {
    switch (b) {
        case BuiltinKind::thread_index:
            if (plan && !in_thread_loop)
                fail("kernel {}: the thread index read outside a thread loop", k.name);
            return d.thread_index;
        case BuiltinKind::block_index:
            return opaque_block_index ? "kiln_block_index" : d.block_index;
        case BuiltinKind::grid_size:
            return d.grid_size;
    }
    return "?";
}

std::optional<std::string> Emitter::packed_halves(const expr::Binary& n) {
    if (d.pack_halves.empty() || n.op != BinOp::bit_or) return std::nullopt;
    const auto* high = std::get_if<expr::Binary>(&n.b->node);
    int64_t shift = 0;
    if (!high || high->op != BinOp::shl || !is_const(high->b, &shift) || shift != 16)
        return std::nullopt;
    for (DType half : {DType::f16, DType::bf16}) {
        const ExprRef* lo = half_bits_of_f32(n.a, half);
        const ExprRef* hi = half_bits_of_f32(high->a, half);
        if (lo && hi)
            return fmt::format("{}({}, {})", fmt::format(fmt::runtime(d.pack_halves), name(half)),
                               expr(*lo), expr(*hi));
    }
    return std::nullopt;
}

std::string Emitter::binary(const ExprRef& e, const expr::Binary& n) {
    const DType t = n.a->type;
    if (std::optional<std::string> packed = packed_halves(n)) return *packed;
    std::string a = expr(n.a), b = expr(n.b);
    const std::string op = name(n.op);
    if (is_float(t)) {
        const std::string fa = widen(t, a), fb = widen(t, b);
        if (is_comparison(n.op)) return "(" + fa + " " + op + " " + fb + ")";
        std::string r;
        if (n.op == BinOp::min || n.op == BinOp::max) {
            const char* which = n.op == BinOp::min ? "min" : "max";
            if (known_not_nan(n.b) && !known_zero(n.b))  // the same as min(b, a)
                r = fmt::format("kiln_{}_f32_a({}, {})", which, fb, fa);
            else
                r = fmt::format("kiln_{}_f32{}({}, {})", which,
                                known_not_nan(n.a)   ? "_a"
                                : known_not_nan(n.b) ? "_b"
                                                     : "",
                                fa, fb);
        } else
            r = "(" + fa + " " + op + " " + fb + ")";
        return narrow(t, r);
    }
    if (t == DType::boolean) {
        if (is_comparison(n.op) || is_logical(n.op)) return "(" + a + " " + op + " " + b + ")";
        return fmt::format("((bool)({} {} {}))", a, op, b);
    }
    const char* ct = c_type(t);
    const char* ut = c_unsigned(t);
    const int width = bits_of(t);
    switch (n.op) {
        case BinOp::add:
        case BinOp::sub:
        case BinOp::mul:
            if (no_wrap && no_wrap->ops.count(e.get()) && (t == DType::i32 || t == DType::i64))
                return fmt::format("({} {} {})", a, op, b);
            return fmt::format("(({})(({}){} {} ({}){}))", ct, ut, a, op, ut, b);
        case BinOp::div:
        case BinOp::rem:
            if (plain_divisor(t, n.b)) return fmt::format("(({})({} {} {}))", ct, a, op, b);
            return fmt::format("kiln_{}_{}({}, {})", n.op == BinOp::div ? "div" : "rem", suffix(t),
                               a, b);
        case BinOp::min:
            return fmt::format("kiln_min_{}({}, {})", suffix(t), a, b);
        case BinOp::max:
            return fmt::format("kiln_max_{}({}, {})", suffix(t), a, b);
        case BinOp::shl:
            return fmt::format("(({})(({}){} << ({} & {})))", ct, ut, a, b, width - 1);
        case BinOp::shr:
            return fmt::format("(({})({} >> ({} & {})))", ct, a, b, width - 1);
        case BinOp::bit_and:
        case BinOp::bit_or:
        case BinOp::bit_xor:
            return fmt::format("(({})({} {} {}))", ct, a, op, b);
        default:
            if (is_comparison(n.op)) return "(" + a + " " + op + " " + b + ")";
            fail("kernel {}: operator {} on {} cannot be emitted", k.name, op, name(t));
    }
}

std::string Emitter::unary(const ExprRef& e, const expr::Unary& n) {
    const DType t = e->type;
    const std::string a = expr(n.a);
    switch (n.op) {
        case UnOp::neg:
            if (is_float(t)) return narrow(t, "(-" + widen(t, a) + ")");
            return fmt::format("(({})(({})0 - ({}){}))", c_type(t), c_unsigned(t), c_unsigned(t),
                               a);
        case UnOp::bit_not:
            return fmt::format("(({})~{})", c_type(t), a);
        case UnOp::logical_not:
            return "(!" + a + ")";
        case UnOp::sqrt:
            return narrow(t, d.sqrt_f32 + "(" + widen(t, a) + ")");
        case UnOp::exp2_device:
            if (d.device_exp2.empty())
                fail(
                    "kernel {}: device_exp2 (the tensor-core class's hardware 2^x); the {} "
                    "dialect has none: expected a CUDA device",
                    k.name, d.name);
            return d.device_exp2 + "(" + a + ")";
        case UnOp::abs:
            if (t == DType::f32) return "kiln_bits_f32(kiln_f32_bits(" + a + ") & 0x7fffffffu)";
            if (is_half(t)) return "((uint16_t)(" + a + " & 0x7fff))";
            return fmt::format("({0} < 0 ? (({1})(({2})0 - ({2}){0})) : {0})", a, c_type(t),
                               c_unsigned(t));
    }
    return "?";
}

std::string Emitter::constant(const ExprRef& e, const expr::Const& c) const {
    if (e->type == DType::f32) return f32_literal(c.f);
    if (e->type == DType::f16)
        return fmt::format("((uint16_t)0x{:04x}u)", semantics::f32_to_f16(static_cast<float>(c.f)));
    if (e->type == DType::bf16)
        return fmt::format("((uint16_t)0x{:04x}u)",
                           semantics::f32_to_bf16(static_cast<float>(c.f)));
    return int_literal(e->type, c.i);
}

std::string Emitter::shuffle(const ExprRef& e, const expr::ShuffleXor& n) {
    if (!d.has_shuffle) fail("kernel {}: the {} dialect has no warp shuffle", k.name, d.name);
    const uint32_t mask = k.block_size >= 32 ? 0xffffffffu : ((1u << k.block_size) - 1u);
    const std::string v = expr(n.value);
    const DType t = e->type;
    if (t == DType::f32 || t == DType::i32 || t == DType::u32 || t == DType::i64)
        return fmt::format("__shfl_xor_sync(0x{:08x}u, {}, {}, {})", mask, v, n.mask, n.width);
    return fmt::format("(({})__shfl_xor_sync(0x{:08x}u, (int32_t){}, {}, {}))", c_type(t), mask, v,
                       n.mask, n.width);
}

// `if ((a == b))` draws -Wparentheses-equality from clang-based OpenCL compilers.
std::string Emitter::condition(const ExprRef& e) {
    std::string text = expr(e);
    if (text.size() < 2 || text.front() != '(') return text;
    int level = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        level += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
        if (level == 0) return i + 1 == text.size() ? text.substr(1, text.size() - 2) : text;
    }
    return text;
}

std::string Emitter::expr(const ExprRef& e) {
    if (auto it = named.find(e.get()); it != named.end()) return it->second;
    return std::visit(
        [&](const auto& n) -> std::string {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, expr::Const>) {
                return constant(e, n);
            } else if constexpr (std::is_same_v<N, expr::Local>) {
                return local(n.id);
            } else if constexpr (std::is_same_v<N, expr::ScalarParam>) {
                if (e->type == DType::boolean) return "(" + param_name(n.param) + " != 0)";
                return param_name(n.param);
            } else if constexpr (std::is_same_v<N, expr::BufferLen>) {
                // The ABI passes lengths as int64_t; an i32 len() is refused at launch past
                // INT32_MAX, so its cast never changes the value.
                if (e->type == DType::i64) return param_name(n.param) + "_len";
                return "((int32_t)" + param_name(n.param) + "_len)";
            } else if constexpr (std::is_same_v<N, expr::Load>) {
                const std::string v =
                    hinted_load(n.mem, fmt::format("{}[{}]", mem(n.mem), expr(n.index)));
                return e->type == DType::boolean ? "(" + v + " != 0)" : v;
            } else if constexpr (std::is_same_v<N, expr::Unary>) {
                return unary(e, n);
            } else if constexpr (std::is_same_v<N, expr::Binary>) {
                return binary(e, n);
            } else if constexpr (std::is_same_v<N, expr::Select>) {
                return fmt::format("({} ? {} : {})", expr(n.cond), expr(n.a), expr(n.b));
            } else if constexpr (std::is_same_v<N, expr::Cast>) {
                return cast(e->type, n.a->type, expr(n.a));
            } else if constexpr (std::is_same_v<N, expr::Bitcast>) {
                if (e->type == DType::f32) return "kiln_bits_f32((uint32_t)" + expr(n.a) + ")";
                if (is_half(e->type)) return "((uint16_t)" + expr(n.a) + ")";  // low 16 bits
                if (n.a->type == DType::f32)
                    return fmt::format("(({})kiln_f32_bits({}))", c_type(e->type), expr(n.a));
                return fmt::format("(({}){})", c_type(e->type), expr(n.a));
            } else if constexpr (std::is_same_v<N, expr::Fma>) {
                const DType t = e->type;
                return narrow(t, fmt::format("{}({}, {}, {})", d.fma_f32, widen(t, expr(n.a)),
                                             widen(t, expr(n.b)), widen(t, expr(n.c))));
            } else if constexpr (std::is_same_v<N, expr::Builtin>) {
                return builtin(n.which);
            } else if constexpr (std::is_same_v<N, expr::Dp4a>) {
                return fmt::format("{}({}, {}, {})", d.dp4a, expr(n.a), expr(n.b), expr(n.c));
            } else if constexpr (std::is_same_v<N, expr::InBounds>) {
                // A check the CPU's plan runs once for the block (a uniform access, outside
                // the thread loops) reports thread 0: every thread would find the same index.
                const bool per_thread = !plan || in_thread_loop;
                return in_bounds_call(n, mem(n.record), expr(n.index), expr(n.length),
                                      n.when ? expr(n.when) : "true",
                                      builtin(BuiltinKind::block_index),
                                      per_thread ? builtin(BuiltinKind::thread_index) : "0");
            } else {
                return shuffle(e, n);
            }
        },
        e->node);
}

void Emitter::name_shared(const std::vector<ExprRef>& roots) {
    named.clear();
    auto eligible = [](const ExprNode& n) {
        return !std::holds_alternative<expr::Load>(n.node) &&
               !std::holds_alternative<expr::ShuffleXor>(n.node);
    };
    for (const ExprNode* n : shared_nodes(roots, eligible)) {
        // A non-owning ref for emission: the node outlives this statement.
        ExprRef ref(ExprRef{}, n);
        const std::string text = expr(ref);
        const std::string tmp = fmt::format("t{}", temp_counter++);
        line(fmt::format("const {} {} = {};", c_type(n->type), tmp, text));
        named[n] = tmp;
    }
}

}  // namespace kiln::codegen
