// print: IR to text, one statement a line, expressions fully parenthesized. A node a statement
// reaches more than once (expressions are DAGs) is printed once, on a line `$N = ...` before the
// statement, and named `$N` where it is used, so the text grows with the DAG, not the tree.
#include "ir/print.hpp"

#include <cmath>
#include <initializer_list>
#include <iterator>
#include <string_view>

#include <unordered_map>

#include <fmt/format.h>

#include "ir/shared_nodes.hpp"
#include "ir/visit.hpp"

namespace kiln::ir {
namespace {

std::string float_text(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    return fmt::format("{:a}", v);
}

struct Printer {
    const Kernel& k;
    std::string out;
    std::unordered_map<const ExprNode*, std::string> names;  // shared nodes of this statement
    int named = 0;

    // Names the nodes the roots reach more than once, each defined by a line at `depth` (or,
    // with a negative depth, by a `$N = ...; ` prefix returned).
    std::string name_shared(const std::vector<ExprRef>& roots, int depth) {
        names.clear();
        std::string prefix;
        for (const ExprNode* n : shared_nodes(roots, [](const ExprNode&) { return true; })) {
            const std::string text = expr(ExprRef(ExprRef{}, n));
            const std::string id = fmt::format("${}", named++);
            if (depth < 0)
                prefix += fmt::format("{} = {}; ", id, text);
            else
                line(depth, fmt::format("{} = {}", id, text));
            names[n] = id;
        }
        return prefix;
    }

    std::string local(int id) const {
        const auto& info = k.locals.at(static_cast<size_t>(id));
        return fmt::format("{}%{}", info.name, id);
    }
    std::string mem(MemRef m) const {
        if (m.space == MemSpace::global) return k.params.at(static_cast<size_t>(m.id)).name;
        const auto& a = array_info(k, m);
        return fmt::format("{}.{}{}", name(m.space), a.name, m.id);
    }

    std::string expr(const ExprRef& e) const {
        std::string text;
        expr_to(text, e);
        return text;
    }

    // Appends e's text to `out`: each node's text written once into one buffer, rather than
    // each level of the expression copying its operands' texts.
    void expr_to(std::string& out, const ExprRef& e) const {
        if (auto it = names.find(e.get()); it != names.end()) {
            out += it->second;
            return;
        }
        const std::string_view t = name(e->type);
        auto append = std::back_inserter(out);
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, expr::Const>) {
                    if (is_float(e->type))
                        fmt::format_to(append, "{}:{}", float_text(n.f), t);
                    else
                        fmt::format_to(append, "{}:{}", n.i, t);
                } else if constexpr (std::is_same_v<N, expr::Local>) {
                    out += local(n.id);
                } else if constexpr (std::is_same_v<N, expr::ScalarParam>) {
                    out += k.params.at(static_cast<size_t>(n.param)).name;
                } else if constexpr (std::is_same_v<N, expr::BufferLen>) {
                    fmt::format_to(append, "{}({})", e->type == DType::i64 ? "len64" : "len",
                                   k.params.at(static_cast<size_t>(n.param)).name);
                } else if constexpr (std::is_same_v<N, expr::Load>) {
                    out += mem(n.mem);
                    out += '[';
                    expr_to(out, n.index);
                    out += ']';
                } else if constexpr (std::is_same_v<N, expr::Unary>) {
                    out += name(n.op);
                    out += '(';
                    expr_to(out, n.a);
                    out += "):";
                    out += t;
                } else if constexpr (std::is_same_v<N, expr::Binary>) {
                    out += '(';
                    expr_to(out, n.a);
                    out += ' ';
                    out += name(n.op);
                    out += ' ';
                    expr_to(out, n.b);
                    out += "):";
                    out += t;
                } else if constexpr (std::is_same_v<N, expr::Select>) {
                    out += "select(";
                    list_to(out, {&n.cond, &n.a, &n.b});
                    out += ')';
                } else if constexpr (std::is_same_v<N, expr::Cast>) {
                    fmt::format_to(append, "cast<{}>(", t);
                    expr_to(out, n.a);
                    out += ')';
                } else if constexpr (std::is_same_v<N, expr::Bitcast>) {
                    fmt::format_to(append, "bitcast<{}>(", t);
                    expr_to(out, n.a);
                    out += ')';
                } else if constexpr (std::is_same_v<N, expr::Fma>) {
                    out += "fma(";
                    list_to(out, {&n.a, &n.b, &n.c});
                    out += "):";
                    out += t;
                } else if constexpr (std::is_same_v<N, expr::Builtin>) {
                    out += name(n.which);
                } else if constexpr (std::is_same_v<N, expr::Dp4a>) {
                    out += "dp4a(";
                    list_to(out, {&n.a, &n.b, &n.c});
                    out += ')';
                } else if constexpr (std::is_same_v<N, expr::InBounds>) {
                    out += "in_bounds(";
                    list_to(out, {&n.index, &n.length});
                    fmt::format_to(append, ", width {}, site {:#x}", n.width, n.site);
                    if (n.when) {
                        out += ", when ";
                        expr_to(out, n.when);
                    }
                    out += ')';
                } else {
                    static_assert(std::is_same_v<N, expr::ShuffleXor>);
                    out += "shuffle_xor(";
                    expr_to(out, n.value);
                    fmt::format_to(append, ", {}, width {})", n.mask, n.width);
                }
            },
            e->node);
    }

    // Appends the expressions' texts, separated by ", ".
    void list_to(std::string& out, std::initializer_list<const ExprRef*> es) const {
        bool first = true;
        for (const ExprRef* e : es) {
            if (!first) out += ", ";
            first = false;
            expr_to(out, *e);
        }
    }

    void line(int depth, const std::string& text) {
        out.append(static_cast<size_t>(depth) * 2, ' ');
        out += text;
        out += '\n';
    }

    void stmt(const StmtRef& s, int depth) {
        if (!s) return;
        std::vector<ExprRef> roots;
        for_each_own_expr(*s, [&](const ExprRef& e) { roots.push_back(e); });
        name_shared(roots, depth);
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& item : n.items) stmt(item, depth);
                } else if constexpr (std::is_same_v<N, stmt::Let>) {
                    line(depth, fmt::format("let {}:{} = {}", local(n.local),
                                            name(k.locals.at(static_cast<size_t>(n.local)).type),
                                            expr(n.value)));
                } else if constexpr (std::is_same_v<N, stmt::Assign>) {
                    line(depth, fmt::format("{} = {}", local(n.local), expr(n.value)));
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    line(depth,
                         fmt::format("{}[{}] = {}", mem(n.mem), expr(n.index), expr(n.value)));
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    line(depth, fmt::format("for {} in [{}, {}) step {} {{", local(n.local),
                                            expr(n.begin), expr(n.end), expr(n.step)));
                    stmt(n.body, depth + 1);
                    line(depth, "}");
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    line(depth, fmt::format("if {} {{", expr(n.cond)));
                    stmt(n.then_body, depth + 1);
                    if (n.else_body) {
                        line(depth, "} else {");
                        stmt(n.else_body, depth + 1);
                    }
                    line(depth, "}");
                } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                    line(depth,
                         fmt::format("{}{}", n.warp ? "barrier warp" : "barrier",
                                     n.copies_in_flight ? fmt::format(" ({} copy groups in flight)",
                                                                      n.copies_in_flight)
                                                        : ""));
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    std::string names;
                    for (int l : n.locals) names += (names.empty() ? "" : ", ") + local(l);
                    line(depth,
                         fmt::format("let ({}):{}x{} = {}[{}..]", names, name(mem_dtype(k, n.mem)),
                                     n.locals.size(), mem(n.mem), expr(n.index)));
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    std::string values;
                    for (const auto& v : n.values) values += (values.empty() ? "" : ", ") + expr(v);
                    line(depth,
                         fmt::format("{}[{}..] = ({}){}", mem(n.mem), expr(n.index), values,
                                     n.from ? fmt::format(" copied from {}[{}..]", mem(n.from->mem),
                                                          expr(n.from->index))
                                            : ""));
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    std::string names;
                    for (int l : n.locals) names += (names.empty() ? "" : ", ") + local(l);
                    line(depth, fmt::format("let ({}) = ldmatrix x{}{} {}[rows at {}]", names,
                                            n.locals.size(), n.trans ? " trans" : "", mem(n.mem),
                                            expr(n.row)));
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    auto list = [&](const std::vector<ExprRef>& vs) {
                        std::string out;
                        for (const auto& v : vs) out += (out.empty() ? "" : ", ") + expr(v);
                        return out;
                    };
                    std::string acc;
                    for (int l : n.acc) acc += (acc.empty() ? "" : ", ") + local(l);
                    line(depth, fmt::format("({}) += mma.{} a({}) b({})", acc, name(n.input),
                                            list(n.a), list(n.b)));
                } else {
                    static_assert(std::is_same_v<N, stmt::Fold>);
                    line(depth,
                         fmt::format(
                             "{} = fold {} lanes {} chunk {} threads {} unroll {} over {} in "
                             "[0, {}) {{",
                             local(n.result), name(n.spec.op), n.spec.lanes, n.spec.chunk,
                             n.spec.threads, n.spec.unroll, local(n.index), expr(n.extent)));
                    stmt(n.body, depth + 1);
                    name_shared({n.value}, depth + 1);
                    line(depth + 1, fmt::format("yield {}", expr(n.value)));
                    line(depth, "}");
                }
            },
            s->node);
    }
};

}  // namespace

std::string print(const ExprRef& e, const Kernel& kernel) {
    Printer p{kernel, {}, {}, 0};
    const std::string prefix = p.name_shared({e}, -1);
    return prefix + p.expr(e);
}

std::string print(const Kernel& kernel) {
    Printer p{kernel, {}, {}, 0};
    // The minimum blocks per unit is printed only when set, so kernels without it keep the
    // text (and so the hash) they had before it existed.
    p.line(0, kernel.min_blocks_per_unit > 0
                  ? fmt::format("kernel {} block {} min_blocks_per_unit {} {{", kernel.name,
                                kernel.block_size, kernel.min_blocks_per_unit)
                  : fmt::format("kernel {} block {} {{", kernel.name, kernel.block_size));
    for (const auto& param : kernel.params) {
        if (param.is_buffer)
            p.line(
                1,
                fmt::format(
                    "buffer {}: {} {}{}", param.name, name(param.dtype), name(param.access),
                    param.cache == CacheHint::normal ? "" : fmt::format(" {}", name(param.cache))));
        else
            p.line(1, fmt::format("scalar {}: {}", param.name, name(param.dtype)));
    }
    for (size_t i = 0; i < kernel.tiles.size(); ++i)
        p.line(1, fmt::format("shared {}{}: {}[{}]", kernel.tiles[i].name, i,
                              name(kernel.tiles[i].type), kernel.tiles[i].size));
    for (size_t i = 0; i < kernel.arrays.size(); ++i)
        p.line(1, fmt::format("local {}{}: {}[{}]{}", kernel.arrays[i].name, i,
                              name(kernel.arrays[i].type), kernel.arrays[i].size,
                              kernel.arrays[i].in_memory ? " in memory" : ""));
    for (const auto& r : kernel.requirements) {
        p.name_shared({r.cond}, 1);
        p.line(1, fmt::format("require {} \"{}\"", p.expr(r.cond), r.what));
    }
    p.stmt(kernel.body, 1);
    p.line(0, "}");
    return p.out;
}

}  // namespace kiln::ir
