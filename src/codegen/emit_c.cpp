// emit_c: IR to C-family source. Values of f16/bf16 travel as their 16 bits and every operation
// on them is computed in f32 and rounded back; integer arithmetic is written through unsigned
// types so it wraps on every compiler; division, shifts and float->int casts go through the
// functions of scalar_semantics.h. Expression nodes used more than once in a statement are
// named once (const temporaries), unless they read memory.
#include "codegen/emit_c.hpp"

#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/divisibility.hpp"
#include "ir/hash.hpp"
#include "ir/lower_folds.hpp"
#include "ir/shared_nodes.hpp"
#include "ir/simplify.hpp"
#include "ir/uniformity.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

namespace {

// The members of a CUDA vector type (float4 and its kin), in element order.
constexpr const char* kCudaParts[] = {"x", "y", "z", "w"};

// The C type a value of `t` has in generated code.
const char* c_type(DType t) {
    switch (t) {
        case DType::f32:
            return "float";
        case DType::f16:
        case DType::bf16:
            return "uint16_t";
        case DType::i8:
            return "int8_t";
        case DType::u8:
            return "uint8_t";
        case DType::i32:
            return "int32_t";
        case DType::u32:
            return "uint32_t";
        case DType::i64:
            return "int64_t";
        case DType::boolean:
            return "bool";
    }
    return "?";
}

// The C type of an element in memory (bool is stored as one byte).
const char* c_mem_type(DType t) {
    return t == DType::boolean ? "uint8_t" : c_type(t);
}

// The unsigned type wrapping arithmetic goes through.
const char* c_unsigned(DType t) {
    switch (t) {
        case DType::i8:
        case DType::u8:
            return "uint8_t";
        case DType::i32:
        case DType::u32:
            return "uint32_t";
        default:
            return "uint64_t";
    }
}

std::string suffix(DType t) {
    return std::string(name(t));
}

std::string f32_literal(double v) {
    const float f = static_cast<float>(v);
    if (std::isnan(f) || std::isinf(f))
        return fmt::format("kiln_bits_f32(0x{:08x}u)", std::bit_cast<uint32_t>(f));
    return fmt::format("{:a}f", static_cast<double>(f));
}

std::string int_literal(DType t, int64_t v) {
    switch (t) {
        case DType::boolean:
            return v ? "true" : "false";
        case DType::u32:
            return fmt::format("{}u", static_cast<uint32_t>(v));
        case DType::i64:
            if (v == std::numeric_limits<int64_t>::min())
                return "((int64_t)(-9223372036854775807 - 1))";
            return fmt::format("((int64_t){})", v);
        default:
            return fmt::format("(({}){})", c_type(t), v);
    }
}

struct KernelEmitter {
    const Kernel& k;
    const Dialect& d;
    Uniformity uniformity;
    Divisibility divisibility;
    bool loops = false;       // CPU: threads are loops
    bool privatized = false;  // CPU with barriers: per-thread values live in [kiln_t] arrays
    std::vector<bool> outer_loop_var;  // CPU: loop variables of uniform loops holding barriers
    bool uniform_context = false;      // CPU: emitting outside the thread loop
    bool split_if_else = false;        // Dialect::split_if_else, in a kernel with barriers
    std::unordered_map<const ExprNode*, std::string> named;  // shared nodes of this statement
    std::string out;
    int depth = 1;
    int temp_counter = 0;

    void line(const std::string& s) {
        out.append(static_cast<size_t>(depth) * 4, ' ');
        out += s;
        out += '\n';
    }

    std::string param_name(int i) const { return "p_" + k.params.at(static_cast<size_t>(i)).name; }

    std::string local(int id) const {
        if (privatized && !outer_loop_var.at(static_cast<size_t>(id)))
            return fmt::format("v{}[{}]", id, uniform_context ? "0" : "kiln_t");
        return fmt::format("v{}", id);
    }

    // The cache hint accesses to `m` are written with on this dialect (normal where it has none).
    CacheHint hint(MemRef m) const {
        if (m.space != MemSpace::global) return CacheHint::normal;
        const CacheHint h = k.params.at(static_cast<size_t>(m.id)).cache;
        const bool written = (h == CacheHint::streaming && !d.streaming_load.empty()) ||
                             (h == CacheHint::keep && !d.keep_load.empty());
        return written ? h : CacheHint::normal;
    }
    // Whether stores to `m` take the dialect's streaming form.
    bool streamed(MemRef m) const { return hint(m) == CacheHint::streaming; }
    // A load from `address` (a pointer into m), with m's cache hint.
    std::string load_at(MemRef m, const std::string& address) const {
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
    std::string hinted_load(MemRef m, const std::string& element) const {
        return hint(m) == CacheHint::normal ? element : load_at(m, "&" + element);
    }

    std::string mem(MemRef m) const {
        if (m.space == MemSpace::global) return param_name(m.id);
        if (m.space == MemSpace::shared) return fmt::format("sh{}", m.id);
        if (privatized) return fmt::format("la{}[{}]", m.id, uniform_context ? "0" : "kiln_t");
        return fmt::format("la{}", m.id);
    }

    // f16/bf16 bits to f32 and back.
    static std::string widen(DType t, const std::string& v) {
        if (t == DType::f16) return "kiln_f16_to_f32(" + v + ")";
        if (t == DType::bf16) return "kiln_bf16_to_f32(" + v + ")";
        return v;
    }
    static std::string narrow(DType t, const std::string& v) {
        if (t == DType::f16) return "kiln_f32_to_f16(" + v + ")";
        if (t == DType::bf16) return "kiln_f32_to_bf16(" + v + ")";
        return v;
    }

    std::string cast(DType to, DType from, const std::string& v) const {
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

    std::string builtin(BuiltinKind b) const {
        if (loops && uniform_context && b == BuiltinKind::thread_index) return "0";
        switch (b) {
            case BuiltinKind::thread_index:
                return d.thread_index;
            case BuiltinKind::block_index:
                return d.block_index;
            case BuiltinKind::grid_size:
                return d.grid_size;
        }
        return "?";
    }

    std::string binary(const ExprRef& e, const expr::Binary& n) {
        const DType t = n.a->type;
        std::string a = expr(n.a), b = expr(n.b);
        const std::string op = name(n.op);
        if (is_float(t)) {
            const std::string fa = widen(t, a), fb = widen(t, b);
            if (is_comparison(n.op)) return "(" + fa + " " + op + " " + fb + ")";
            std::string r;
            if (n.op == BinOp::min)
                r = "kiln_min_f32(" + fa + ", " + fb + ")";
            else if (n.op == BinOp::max)
                r = "kiln_max_f32(" + fa + ", " + fb + ")";
            else
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
                return fmt::format("(({})(({}){} {} ({}){}))", ct, ut, a, op, ut, b);
            case BinOp::div:
                return fmt::format("kiln_div_{}({}, {})", suffix(t), a, b);
            case BinOp::rem:
                return fmt::format("kiln_rem_{}({}, {})", suffix(t), a, b);
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
        (void)e;
    }

    std::string unary(const ExprRef& e, const expr::Unary& n) {
        const DType t = e->type;
        const std::string a = expr(n.a);
        switch (n.op) {
            case UnOp::neg:
                if (is_float(t)) return narrow(t, "(-" + widen(t, a) + ")");
                return fmt::format("(({})(({})0 - ({}){}))", c_type(t), c_unsigned(t),
                                   c_unsigned(t), a);
            case UnOp::bit_not:
                return fmt::format("(({})~{})", c_type(t), a);
            case UnOp::logical_not:
                return "(!" + a + ")";
            case UnOp::sqrt:
                return narrow(t, d.sqrt_f32 + "(" + widen(t, a) + ")");
            case UnOp::abs:
                if (t == DType::f32) return "kiln_bits_f32(kiln_f32_bits(" + a + ") & 0x7fffffffu)";
                if (is_half(t)) return "((uint16_t)(" + a + " & 0x7fff))";
                return fmt::format("({0} < 0 ? (({1})(({2})0 - ({2}){0})) : {0})", a, c_type(t),
                                   c_unsigned(t));
        }
        return "?";
    }

    std::string constant(const ExprRef& e, const expr::Const& c) const {
        if (e->type == DType::f32) return f32_literal(c.f);
        if (e->type == DType::f16)
            return fmt::format("((uint16_t)0x{:04x}u)",
                               semantics::f32_to_f16(static_cast<float>(c.f)));
        if (e->type == DType::bf16)
            return fmt::format("((uint16_t)0x{:04x}u)",
                               semantics::f32_to_bf16(static_cast<float>(c.f)));
        return int_literal(e->type, c.i);
    }

    std::string shuffle(const ExprRef& e, const expr::ShuffleXor& n) {
        if (!d.has_shuffle) fail("kernel {}: the {} dialect has no warp shuffle", k.name, d.name);
        const uint32_t mask = k.block_size >= 32 ? 0xffffffffu : ((1u << k.block_size) - 1u);
        const std::string v = expr(n.value);
        const DType t = e->type;
        if (t == DType::f32 || t == DType::i32 || t == DType::u32 || t == DType::i64)
            return fmt::format("__shfl_xor_sync(0x{:08x}u, {}, {}, {})", mask, v, n.mask, n.width);
        return fmt::format("(({})__shfl_xor_sync(0x{:08x}u, (int32_t){}, {}, {}))", c_type(t), mask,
                           v, n.mask, n.width);
    }

    // An if's condition without the parentheses that enclose all of it: `if ((a == b))` draws
    // -Wparentheses-equality from clang-based OpenCL compilers.
    std::string condition(const ExprRef& e) {
        std::string text = expr(e);
        if (text.size() < 2 || text.front() != '(') return text;
        int depth = 0;
        for (size_t i = 0; i < text.size(); ++i) {
            depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
            if (depth == 0) return i + 1 == text.size() ? text.substr(1, text.size() - 2) : text;
        }
        return text;
    }

    std::string expr(const ExprRef& e) {
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
                    return param_name(n.param) + "_len";
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
                } else {
                    return shuffle(e, n);
                }
            },
            e->node);
    }

    // Names the shared, memory-free nodes of a statement's expressions as const temporaries.
    void name_shared(const std::vector<ExprRef>& roots) {
        named.clear();
        auto eligible = [](const ExprNode& n) {
            return !std::holds_alternative<expr::Load>(n.node) &&
                   !std::holds_alternative<expr::ShuffleXor>(n.node);
        };
        for (const ExprNode* n : shared_nodes(roots, eligible)) {
            // Rebuild a non-owning ref for emission: the node outlives this statement.
            ExprRef ref(ExprRef{}, n);
            const std::string text = expr(ref);
            const std::string tmp = fmt::format("t{}", temp_counter++);
            line(fmt::format("const {} {} = {};", c_type(n->type), tmp, text));
            named[n] = tmp;
        }
    }

    std::string stored(DType t, const std::string& v) const {
        return t == DType::boolean ? "(uint8_t)(" + v + ")" : v;
    }

    void stmt(const StmtRef& s) {
        if (!s) return;
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& i : n.items) stmt(i);
                } else if constexpr (std::is_same_v<N, stmt::Let> ||
                                     std::is_same_v<N, stmt::Assign>) {
                    name_shared({n.value});
                    line(fmt::format("{} = {};", local(n.local), expr(n.value)));
                    named.clear();
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    name_shared({n.index, n.value});
                    const std::string at = fmt::format("{}[{}]", mem(n.mem), expr(n.index));
                    const std::string value = stored(mem_dtype(k, n.mem), expr(n.value));
                    if (streamed(n.mem))
                        line(fmt::format(fmt::runtime(d.streaming_store), "&" + at, value) + ";");
                    else
                        line(fmt::format("{} = {};", at, value));
                    named.clear();
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    named.clear();
                    line(fmt::format("for ({0} = {1}; {0} < {2}; {0} += {3}) {{", local(n.local),
                                     expr(n.begin), expr(n.end), expr(n.step)));
                    ++depth;
                    stmt(n.body);
                    --depth;
                    line("}");
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    name_shared({n.cond});
                    if (n.else_body && split_if_else) {
                        const std::string c = fmt::format("kiln_c{}", temp_counter++);
                        line(fmt::format("volatile const int {} = {};", c, condition(n.cond)));
                        named.clear();
                        line(fmt::format("if ({}) {{", c));
                        ++depth;
                        stmt(n.then_body);
                        --depth;
                        line("}");
                        line(fmt::format("if (!{}) {{", c));
                        ++depth;
                        stmt(n.else_body);
                        --depth;
                        line("}");
                        return;
                    }
                    line(fmt::format("if ({}) {{", condition(n.cond)));
                    named.clear();
                    ++depth;
                    stmt(n.then_body);
                    --depth;
                    if (n.else_body) {
                        line("} else {");
                        ++depth;
                        stmt(n.else_body);
                        --depth;
                    }
                    line("}");
                } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                    line(n.warp && !d.warp_barrier.empty() ? d.warp_barrier : d.barrier);
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    name_shared({n.index});
                    load_vector(n);
                    named.clear();
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    std::vector<ExprRef> roots = n.values;
                    roots.push_back(n.index);
                    name_shared(roots);
                    store_vector(n);
                    named.clear();
                } else {
                    fail("kernel {}: fold reached the emitter unlowered", k.name);
                }
            },
            s->node);
    }

    // The vector type of `width` elements of t: uint4, int2, float4, ...
    static std::string vector_type(DType t, size_t width) {
        return fmt::format("{}{}",
                           t == DType::f32   ? "float"
                           : t == DType::i32 ? "int"
                                             : "uint",
                           width);
    }

    // The address space of a vector access's pointer: OpenCL pointers name theirs; CUDA's are
    // generic (a __shared__ there would declare a shared variable).
    std::string vector_space(const MemRef& m) const {
        return d.vector_load != VectorLoad::vload ? ""
               : m.space == MemSpace::global      ? d.global_space
               : m.space == MemSpace::shared      ? d.shared_space
                                                  : "";
    }

    // Whether a vector access of `width` elements at `index` of m is aligned to its whole width
    // in every launch: a buffer whose start the runtime aligns, at a multiple of the width.
    bool known_aligned(const MemRef& m, const ExprRef& index, size_t width) const {
        return m.space == MemSpace::global && d.buffer_alignment >= static_cast<int>(width) * 4 &&
               divisibility.of(index) % static_cast<int64_t>(width) == 0;
    }

    // CUDA's vector access at kiln_at: `wide` alone where the index is known to be aligned,
    // else `wide` behind a run-time test of kiln_at's alignment and `elements` otherwise.
    void aligned_or_elements(const MemRef& m, const ExprRef& index, size_t width,
                             const std::function<void()>& wide,
                             const std::function<void()>& elements) {
        if (known_aligned(m, index, width)) {
            wide();
            return;
        }
        line(fmt::format("if ((((unsigned long long)kiln_at) & {}ull) == 0ull) {{", width * 4 - 1));
        ++depth;
        wide();
        --depth;
        line("} else {");
        ++depth;
        elements();
        --depth;
        line("}");
    }

    // A vector store: elements index, index+1, ... of the memory take the values, each evaluated
    // once (on CUDA, in order, into kiln_v).
    void store_vector(const stmt::StoreVector& n) {
        const DType t = mem_dtype(k, n.mem);
        const size_t width = n.values.size();
        const bool streaming = streamed(n.mem);
        const std::string vec = vector_type(t, width);
        std::vector<std::string> values;
        for (const auto& v : n.values) values.push_back(expr(v));
        auto element_stores = [&](auto part) {
            for (size_t i = 0; i < width; ++i) {
                const std::string at = fmt::format("kiln_at[{}]", i);
                line(streaming
                         ? fmt::format(fmt::runtime(d.streaming_store), "&" + at, part(i)) + ";"
                         : fmt::format("{} = {};", at, part(i)));
            }
        };
        line("{");
        ++depth;
        line(fmt::format("{}{}* kiln_at = &{}[{}];", vector_space(n.mem), c_mem_type(t), mem(n.mem),
                         expr(n.index)));
        switch (d.vector_load) {
            case VectorLoad::elements:
                element_stores([&](size_t i) { return values[i]; });
                break;
            case VectorLoad::aligned_or_elements: {
                line(fmt::format("const {} kiln_v = make_{}({});", vec, vec,
                                 fmt::join(values, ", ")));
                const std::string wide =
                    streaming ? fmt::format(fmt::runtime(d.streaming_store),
                                            fmt::format("({}*)kiln_at", vec), "kiln_v") +
                                    ";"
                              : fmt::format("*({}*)kiln_at = kiln_v;", vec);
                aligned_or_elements(
                    n.mem, n.index, width, [&] { line(wide); },
                    [&] {
                        element_stores(
                            [&](size_t i) { return fmt::format("kiln_v.{}", kCudaParts[i]); });
                    });
                break;
            }
            case VectorLoad::vload:
                line(fmt::format("vstore{}(({})({}), 0, kiln_at);", width, vec,
                                 fmt::join(values, ", ")));
                break;
        }
        --depth;
        line("}");
    }

    // A vector load: the locals take elements index, index+1, ... of the memory.
    void load_vector(const stmt::LoadVector& n) {
        const DType t = mem_dtype(k, n.mem);
        const size_t width = n.locals.size();
        auto from = [&](const std::string& base) {
            for (size_t i = 0; i < width; ++i)
                line(fmt::format("{} = {};", local(n.locals[i]),
                                 hinted_load(n.mem, fmt::format("{}[{}]", base, i))));
        };
        const std::string vec = vector_type(t, width);
        const std::string space = vector_space(n.mem);
        line("{");
        ++depth;
        line(fmt::format("const {}{}* kiln_at = &{}[{}];", space, c_mem_type(t), mem(n.mem),
                         expr(n.index)));
        switch (d.vector_load) {
            case VectorLoad::elements:
                from("kiln_at");
                break;
            case VectorLoad::aligned_or_elements: {
                auto wide = [&] {
                    line(fmt::format("const {} kiln_v = {};", vec,
                                     load_at(n.mem, fmt::format("(const {}*)kiln_at", vec))));
                    for (size_t i = 0; i < width; ++i)
                        line(fmt::format("{} = kiln_v.{};", local(n.locals[i]), kCudaParts[i]));
                };
                aligned_or_elements(n.mem, n.index, width, wide, [&] { from("kiln_at"); });
                break;
            }
            case VectorLoad::vload:
                line(fmt::format("const {} kiln_v = vload{}(0, kiln_at);", vec, width));
                for (size_t i = 0; i < width; ++i)
                    line(fmt::format("{} = kiln_v.s{};", local(n.locals[i]), i));
                break;
        }
        --depth;
        line("}");
    }

    // CPU: a statement holding barriers, as loops over threads between the barriers.
    void region(const StmtRef& s) {
        std::vector<StmtRef> batch;
        auto flush = [&] {
            if (batch.empty()) return;
            line(fmt::format("for (int32_t kiln_t = 0; kiln_t < {}; ++kiln_t) {{", k.block_size));
            ++depth;
            for (const auto& b : batch) stmt(b);
            --depth;
            line("}");
            batch.clear();
        };
        std::function<void(const StmtRef&)> item = [&](const StmtRef& i) {
            if (!contains_barrier(i)) {
                batch.push_back(i);
                return;
            }
            flush();
            std::visit(
                [&](const auto& n) {
                    using N = std::decay_t<decltype(n)>;
                    if constexpr (std::is_same_v<N, stmt::Seq>) {
                        for (const auto& x : n.items) item(x);
                        flush();
                    } else if constexpr (std::is_same_v<N, stmt::For>) {
                        uniform_context = true;
                        line(fmt::format("for ({0} = {1}; {0} < {2}; {0} += {3}) {{",
                                         local(n.local), expr(n.begin), expr(n.end), expr(n.step)));
                        uniform_context = false;
                        ++depth;
                        region(n.body);
                        --depth;
                        line("}");
                    } else if constexpr (std::is_same_v<N, stmt::If>) {
                        uniform_context = true;
                        line(fmt::format("if ({}) {{", condition(n.cond)));
                        uniform_context = false;
                        ++depth;
                        region(n.then_body);
                        --depth;
                        if (n.else_body) {
                            line("} else {");
                            ++depth;
                            region(n.else_body);
                            --depth;
                        }
                        line("}");
                    }
                    // A Barrier is the boundary between two thread loops: nothing to write.
                },
                i->node);
        };
        item(s);
        flush();
    }

    void mark_outer_loops(const StmtRef& s) {
        if (!s) return;
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& i : n.items) mark_outer_loops(i);
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    if (contains_barrier(n.body)) {
                        outer_loop_var[static_cast<size_t>(n.local)] = true;
                        mark_outer_loops(n.body);
                    }
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    mark_outer_loops(n.then_body);
                    mark_outer_loops(n.else_body);
                }
            },
            s->node);
    }

    std::string signature(const std::string& entry) const {
        if (loops)
            return fmt::format(
                "extern \"C\" void {}(void* const* kiln_args, int64_t kiln_block_begin, "
                "int64_t kiln_block_end, int64_t kiln_grid)",
                entry);
        std::vector<std::string> params;
        for (size_t i = 0; i < k.params.size(); ++i) {
            const Param& p = k.params[i];
            const std::string pn = param_name(static_cast<int>(i));
            if (p.is_buffer) {
                const char* cnst = p.access == Access::read ? "const " : "";
                params.push_back(fmt::format("{}{}{}* {} {}", d.global_space, cnst,
                                             c_mem_type(p.dtype), d.restrict_kw, pn));
                params.push_back(fmt::format("int32_t {}_len", pn));
            } else {
                params.push_back(fmt::format("{} {}", c_mem_type(p.dtype), pn));
            }
        }
        const std::string joined = fmt::format("{}", fmt::join(params, ", "));
        if (d.name == "cuda")
            return fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({})",
                               k.min_blocks_per_unit > 0
                                   ? fmt::format("{}, {}", k.block_size, k.min_blocks_per_unit)
                                   : fmt::format("{}", k.block_size),
                               entry, joined);
        return fmt::format("__kernel __attribute__((reqd_work_group_size({}, 1, 1))) void {}({})",
                           k.block_size, entry, joined);
    }

    void unpack_cpu_args() {
        int slot = 0;
        for (size_t i = 0; i < k.params.size(); ++i) {
            const Param& p = k.params[i];
            const std::string pn = param_name(static_cast<int>(i));
            if (p.is_buffer) {
                const char* cnst = p.access == Access::read ? "const " : "";
                line(fmt::format("{0}{1}* {2} {3} = *({0}{1}* const*)kiln_args[{4}];", cnst,
                                 c_mem_type(p.dtype), d.restrict_kw, pn, slot));
                line(fmt::format("const int32_t {}_len = *(const int32_t*)kiln_args[{}];", pn,
                                 slot + 1));
                slot += 2;
            } else {
                line(fmt::format("const {0} {1} = *(const {0}*)kiln_args[{2}];",
                                 c_mem_type(p.dtype), pn, slot));
                slot += 1;
            }
        }
        line("const int32_t kiln_grid_size = (int32_t)kiln_grid;");
        line("(void)kiln_grid_size;");
    }

    void declare_locals() {
        for (size_t i = 0; i < k.locals.size(); ++i) {
            const char* t = c_type(k.locals[i].type);
            if (privatized && !outer_loop_var[i])
                line(fmt::format("{} v{}[{}];", t, i, k.block_size));
            else
                line(fmt::format("{} v{};", t, i));
        }
        for (size_t i = 0; i < k.arrays.size(); ++i) {
            const auto& a = k.arrays[i];
            if (privatized)
                line(fmt::format("{} la{}[{}][{}];", c_mem_type(a.type), i, k.block_size, a.size));
            else
                line(fmt::format("{} la{}[{}];", c_mem_type(a.type), i, a.size));
        }
    }

    void declare_tiles() {
        for (size_t i = 0; i < k.tiles.size(); ++i)
            line(fmt::format("{}{} sh{}[{}];", d.shared_space, c_mem_type(k.tiles[i].type), i,
                             k.tiles[i].size));
    }

    std::string emit(const std::string& entry) {
        loops = d.threads_as_loops;
        outer_loop_var.assign(k.locals.size(), false);
        const bool has_barriers = contains_barrier(k.body);
        split_if_else = d.split_if_else && has_barriers;
        out += signature(entry) + " {\n";
        if (loops) {
            privatized = has_barriers;
            if (privatized) mark_outer_loops(k.body);
            unpack_cpu_args();
            line("for (int64_t kiln_b = kiln_block_begin; kiln_b < kiln_block_end; ++kiln_b) {");
            ++depth;
            line("const int32_t kiln_block = (int32_t)kiln_b;");
            line("(void)kiln_block;");
            declare_tiles();
            if (privatized) {
                declare_locals();
                region(k.body);
            } else {
                line(fmt::format("for (int32_t kiln_t = 0; kiln_t < {}; ++kiln_t) {{",
                                 k.block_size));
                ++depth;
                declare_locals();
                stmt(k.body);
                --depth;
                line("}");
            }
            --depth;
            line("}");
        } else {
            declare_tiles();
            declare_locals();
            stmt(k.body);
        }
        out += "}\n";
        return out;
    }
};

}  // namespace

std::string entry_name(const Kernel& kernel) {
    return fmt::format("{}_{}", kernel.name, hex(structural_hash(kernel)).substr(0, 12));
}

std::string emit_source(const std::vector<const Kernel*>& kernels, const Dialect& dialect) {
    std::string src = fmt::format("// Generated by kiln for the {} backend.\n", dialect.name);
    src += dialect.prelude;
    src += scalar_semantics_source;
    src += "\n";
    // A kernel listed twice is written once: its entry name is its content's hash, and a compile
    // unit may define each entry only once.
    std::unordered_set<std::string> written;
    for (const Kernel* kernel : kernels) {
        if (!written.insert(entry_name(*kernel)).second) continue;
        const Kernel lowered = simplify(lower_folds(*kernel, dialect.warp_size));
        KernelEmitter e{lowered, dialect, analyze_uniformity(lowered), Divisibility(lowered)};
        src += "\n" + e.emit(entry_name(*kernel));
    }
    return src;
}

}  // namespace kiln::codegen
