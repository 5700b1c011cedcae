// verify: structural and type checks over the whole kernel.
#include "ir/verify.hpp"

#include <set>
#include <unordered_set>

#include "ir/print.hpp"
#include "ir/uniformity.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"

namespace kiln::ir {
namespace {

struct Verifier {
    const Kernel& k;
    Uniformity uniformity;
    std::vector<bool> declared;
    std::vector<std::string> divergence;  // stack: why the current point is divergent, if it is
    std::unordered_set<const ExprNode*> checked;  // nodes checked in the current statement

    [[noreturn]] void error(const std::string& what) const { fail("kernel {}: {}", k.name, what); }

    std::string text(const ExprRef& e) const { return print(e, k); }

    // A vector access ("load" or "store") of `width` elements at `index` of m: checks both and
    // returns m's element type.
    DType check_vector(const char* what, MemRef m, const ExprRef& index, size_t width) {
        expr(index);
        check_mem(m, std::string_view(what) == "store");
        const DType t = mem_dtype(k, m);
        if (!is_integer(index->type))
            error(fmt::format("vector {} index {} is {}; expected an integer", what, text(index),
                              name(index->type)));
        const bool store = std::string_view(what) == "store";
        const int w = static_cast<int>(width);
        if (store ? !storable_vector(t, w) : !loadable_vector(t, w))
            error(fmt::format("vector {} of {} {} elements; expected 2 or 4 of a 4-byte type{}",
                              what, width, name(t), store ? "" : ", or 4 or 8 of a 2-byte type"));
        return t;
    }

    void check_mem(MemRef m, bool is_store) const {
        const auto count = m.space == MemSpace::global   ? k.params.size()
                           : m.space == MemSpace::shared ? k.tiles.size()
                                                         : k.arrays.size();
        if (m.id < 0 || static_cast<size_t>(m.id) >= count)
            error(fmt::format("reference to {} memory #{} which does not exist", name(m.space),
                              m.id));
        if (m.space != MemSpace::global) return;
        const Param& p = k.params[static_cast<size_t>(m.id)];
        if (!p.is_buffer) error(fmt::format("'{}' is a scalar, not a buffer", p.name));
        if (is_store && p.access == Access::read)
            error(fmt::format("stores to buffer '{}', which is declared read only", p.name));
        if (!is_store && p.access == Access::write)
            error(fmt::format("reads buffer '{}', which is declared write only", p.name));
    }

    void expr(const ExprRef& e) {
        if (!e) error("missing expression");
        // Each distinct node once per statement (expressions are DAGs; a node may be reused in a
        // later statement, where its locals are checked again).
        if (!checked.insert(e.get()).second) return;
        for_each_child(e, [&](const ExprRef& c) { expr(c); });
        const DType t = e->type;
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, expr::Local>) {
                    if (n.id < 0 || static_cast<size_t>(n.id) >= declared.size() ||
                        !declared[static_cast<size_t>(n.id)])
                        error(fmt::format("local #{} used before it is declared", n.id));
                    if (k.locals[static_cast<size_t>(n.id)].type != t)
                        error(fmt::format("local #{} read as {}", n.id, name(t)));
                } else if constexpr (std::is_same_v<N, expr::ScalarParam>) {
                    const auto& p = k.params.at(static_cast<size_t>(n.param));
                    if (p.is_buffer || p.dtype != t)
                        error(fmt::format("bad scalar read of '{}'", p.name));
                } else if constexpr (std::is_same_v<N, expr::BufferLen>) {
                    if (!k.params.at(static_cast<size_t>(n.param)).is_buffer)
                        error("len() of a non-buffer");
                    if (t != DType::i32 && t != DType::i64)
                        error(fmt::format("len() read as {}; expected i32 or i64", name(t)));
                } else if constexpr (std::is_same_v<N, expr::Load>) {
                    check_mem(n.mem, false);
                    if (mem_dtype(k, n.mem) != t)
                        error(fmt::format("load of {} as {}", text(e), name(t)));
                    if (!is_integer(n.index->type))
                        error(fmt::format("index {} is {}; expected an integer", text(n.index),
                                          name(n.index->type)));
                } else if constexpr (std::is_same_v<N, expr::Binary>) {
                    if (n.a->type != n.b->type)
                        error(fmt::format("type mismatch in {}: {} vs {}", text(e), name(n.a->type),
                                          name(n.b->type)));
                    const DType want = is_comparison(n.op) ? DType::boolean : n.a->type;
                    if (t != want)
                        error(fmt::format("{} has type {}; expected {}", text(e), name(t),
                                          name(want)));
                    if (is_logical(n.op) && t != DType::boolean)
                        error(fmt::format("{} needs bool operands", text(e)));
                } else if constexpr (std::is_same_v<N, expr::Unary>) {
                    if (n.a->type != t) error(fmt::format("{}: operand type differs", text(e)));
                } else if constexpr (std::is_same_v<N, expr::Select>) {
                    if (n.cond->type != DType::boolean || n.a->type != t || n.b->type != t)
                        error(fmt::format("select {} has mismatched types", text(e)));
                } else if constexpr (std::is_same_v<N, expr::Dp4a>) {
                    if (t != DType::i32 || n.a->type != t || n.b->type != t || n.c->type != t)
                        error(fmt::format("dp4a {} needs i32 operands", text(e)));
                } else if constexpr (std::is_same_v<N, expr::Bitcast>) {
                    const bool half_bits =
                        (is_half(t) && (n.a->type == DType::u32 || n.a->type == DType::i32)) ||
                        (is_half(n.a->type) && (t == DType::u32 || t == DType::i32));
                    if (!half_bits && bits_of(n.a->type) != bits_of(t))
                        error(fmt::format("bitcast {} changes width", text(e)));
                } else if constexpr (std::is_same_v<N, expr::Fma>) {
                    if (!is_float(t) || n.a->type != t || n.b->type != t || n.c->type != t)
                        error(
                            fmt::format("fma {} needs three operands of one float type", text(e)));
                }
            },
            e->node);
    }

    void declare(int local, DType t) {
        if (local < 0 || static_cast<size_t>(local) >= declared.size())
            error(fmt::format("local #{} does not exist", local));
        if (declared[static_cast<size_t>(local)])
            error(fmt::format("local #{} declared twice", local));
        if (k.locals[static_cast<size_t>(local)].type != t)
            error(fmt::format("local #{} declared {} but given {}", local,
                              name(k.locals[static_cast<size_t>(local)].type), name(t)));
        declared[static_cast<size_t>(local)] = true;
    }

    void barrier_point(const std::string& what) const {
        if (divergence.empty()) return;
        error(
            fmt::format("{} in divergent code: {}, so not every thread of the block reaches "
                        "it; barriers must be reached by all threads — hoist it out (clamp "
                        "indices instead of branching around it)",
                        what, divergence.back()));
    }

    // An asynchronous copy: 16 bytes of a buffer into a shared tile.
    void copy_source(const stmt::StoreVector& n, DType tile_type) {
        expr(n.from->index);
        check_mem(n.from->mem, false);
        if (n.mem.space != MemSpace::shared || n.from->mem.space != MemSpace::global)
            error("a copying vector store must copy from a buffer into a shared tile");
        const int64_t bytes = static_cast<int64_t>(n.values.size()) * size_of(tile_type);
        if (bytes != 16)
            error(fmt::format("a copying vector store of {} bytes; expected 16", bytes));
        if (!is_integer(n.from->index->type))
            error(fmt::format("copy source index {} is {}; expected an integer",
                              text(n.from->index), name(n.from->index->type)));
    }

    // A warp's ldmatrix: 1, 2 or 4 matrices from a u32 tile, reached by whole warps.
    void load_matrix(const stmt::LoadMatrix& n) {
        expr(n.row);
        check_mem(n.mem, false);
        if (n.mem.space != MemSpace::shared || mem_dtype(k, n.mem) != DType::u32)
            error("ldmatrix reads a u32 shared tile");
        if (n.locals.size() != 1 && n.locals.size() != 2 && n.locals.size() != 4)
            error(fmt::format("ldmatrix of {} matrices; expected 1, 2 or 4", n.locals.size()));
        if (!is_integer(n.row->type))
            error(fmt::format("ldmatrix row {} is {}; expected an integer", text(n.row),
                              name(n.row->type)));
        for (int l : n.locals) declare(l, DType::u32);
        barrier_point("ldmatrix (a warp's collective load)");
    }

    // A warp's step: f16/bf16 inputs in fragments of 4 and 2 u32 pairs, 4 f32 accumulators,
    // reached by whole warps (as a barrier: never under a condition that differs between
    // threads).
    void mma(const stmt::Mma& n) {
        if (n.input != DType::f16 && n.input != DType::bf16)
            error(fmt::format("mma of {} inputs; expected f16 or bf16", name(n.input)));
        if (n.a.size() != 4 || n.b.size() != 2 || n.acc.size() != 4)
            error(fmt::format("mma with {} a, {} b and {} accumulator values; expected 4, 2 and 4",
                              n.a.size(), n.b.size(), n.acc.size()));
        for (const auto* part : {&n.a, &n.b})
            for (const auto& v : *part) {
                expr(v);
                if (v->type != DType::u32)
                    error(fmt::format("mma fragment value {} is {}; expected u32 (a pair of {})",
                                      text(v), name(v->type), name(n.input)));
            }
        for (int l : n.acc) {
            if (l < 0 || static_cast<size_t>(l) >= declared.size() ||
                !declared[static_cast<size_t>(l)])
                error(fmt::format("mma accumulates into undeclared local #{}", l));
            if (k.locals[static_cast<size_t>(l)].type != DType::f32)
                error(fmt::format("mma accumulates into a {} local; expected f32",
                                  name(k.locals[static_cast<size_t>(l)].type)));
        }
        barrier_point("mma (a warp's collective step)");
        if (k.block_size % stmt::kWarpBarrierGroup != 0)
            error(
                fmt::format("mma needs a block size that is a multiple of {}; the block has {} "
                            "threads",
                            stmt::kWarpBarrierGroup, k.block_size));
    }

    void stmt(const StmtRef& s) {
        if (!s) return;
        checked.clear();
        std::visit(
            [&](const auto& n) {
                using N = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<N, stmt::Seq>) {
                    for (const auto& i : n.items) stmt(i);
                } else if constexpr (std::is_same_v<N, stmt::Let>) {
                    expr(n.value);
                    declare(n.local, n.value->type);
                } else if constexpr (std::is_same_v<N, stmt::Assign>) {
                    expr(n.value);
                    if (!declared.at(static_cast<size_t>(n.local)))
                        error(fmt::format("assignment to undeclared local #{}", n.local));
                    if (k.locals[static_cast<size_t>(n.local)].type != n.value->type)
                        error(fmt::format("assignment of {} to a {} local", name(n.value->type),
                                          name(k.locals[static_cast<size_t>(n.local)].type)));
                } else if constexpr (std::is_same_v<N, stmt::Store>) {
                    expr(n.index);
                    expr(n.value);
                    check_mem(n.mem, true);
                    if (!is_integer(n.index->type)) error("store index is not an integer");
                    if (mem_dtype(k, n.mem) != n.value->type)
                        error(fmt::format("store of {} into {} memory", name(n.value->type),
                                          name(mem_dtype(k, n.mem))));
                } else if constexpr (std::is_same_v<N, stmt::For>) {
                    expr(n.begin);
                    expr(n.end);
                    expr(n.step);
                    if (!is_integer(n.begin->type) || n.begin->type != n.end->type ||
                        n.end->type != n.step->type)
                        error("for loop bounds must be integers of one type");
                    declare(n.local, n.begin->type);
                    const bool v = uniformity.varying(n.begin) || uniformity.varying(n.end) ||
                                   uniformity.varying(n.step);
                    if (v)
                        divergence.push_back(
                            fmt::format("the bounds of `for {} in [{}, {})` differ "
                                        "between threads",
                                        k.locals[static_cast<size_t>(n.local)].name, text(n.begin),
                                        text(n.end)));
                    stmt(n.body);
                    if (v) divergence.pop_back();
                } else if constexpr (std::is_same_v<N, stmt::If>) {
                    expr(n.cond);
                    if (n.cond->type != DType::boolean) error("if condition is not bool");
                    const bool v = uniformity.varying(n.cond);
                    if (v)
                        divergence.push_back(
                            fmt::format("the condition of `if {}` differs between "
                                        "threads",
                                        text(n.cond)));
                    stmt(n.then_body);
                    stmt(n.else_body);
                    if (v) divergence.pop_back();
                } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                    barrier_point(n.warp ? "warp barrier" : "barrier");
                    if (n.copies_in_flight < 0 || n.copies_in_flight > stmt::kMaxCopiesInFlight)
                        error(
                            fmt::format("a barrier leaving {} copy groups in flight; expected 0 "
                                        "to {}",
                                        n.copies_in_flight, stmt::kMaxCopiesInFlight));
                    if (n.warp && k.block_size % stmt::kWarpBarrierGroup != 0)
                        error(
                            fmt::format("a warp barrier needs a block size that is a multiple "
                                        "of {}; the block has {} threads",
                                        stmt::kWarpBarrierGroup, k.block_size));
                } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                    const DType t = check_vector("load", n.mem, n.index, n.locals.size());
                    for (int l : n.locals) declare(l, t);
                } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                    for (const auto& v : n.values) expr(v);
                    const DType t = check_vector("store", n.mem, n.index, n.values.size());
                    for (const auto& v : n.values)
                        if (v->type != t)
                            error(fmt::format("vector store of {} into {} memory", name(v->type),
                                              name(t)));
                    if (n.from) copy_source(n, t);
                } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                    load_matrix(n);
                } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                    mma(n);
                } else {
                    const FoldSpec& f = n.spec;
                    expr(n.extent);
                    if (f.threads > 1)
                        barrier_point(
                            fmt::format("a fold over {} threads (it exchanges partial "
                                        "results through a barrier)",
                                        f.threads));
                    if (k.block_size % f.threads != 0 || f.lanes % f.threads != 0)
                        error(
                            fmt::format("fold threads {} must divide the lanes {} and the block "
                                        "size {}",
                                        f.threads, f.lanes, k.block_size));
                    if (contains_barrier(n.body)) error("a fold body may not contain barriers");
                    declare(n.index, DType::i32);
                    stmt(n.body);
                    expr(n.value);
                    declare(n.result, n.value->type);
                }
            },
            s->node);
    }
};

}  // namespace

void verify(const Kernel& kernel) {
    if (kernel.block_size < 1 || kernel.block_size > 1024)
        fail("kernel {}: block size {} is out of range; expected 1 to 1024", kernel.name,
             kernel.block_size);
    if (kernel.min_blocks_per_unit < 0 || kernel.min_blocks_per_unit > ir::kMaxMinBlocksPerUnit)
        fail("kernel {}: minimum blocks per compute unit {} is out of range; expected 0 to {}",
             kernel.name, kernel.min_blocks_per_unit, ir::kMaxMinBlocksPerUnit);
    std::set<std::string> names;
    for (const auto& p : kernel.params)
        if (!names.insert(p.name).second)
            fail("kernel {}: two parameters named '{}'", kernel.name, p.name);
    Verifier v{
        kernel, analyze_uniformity(kernel), std::vector<bool>(kernel.locals.size(), false), {}};
    v.stmt(kernel.body);
    for (const auto& r : kernel.requirements) {
        walk(r.cond, [&](const ExprRef& e) {
            if (!std::holds_alternative<expr::Const>(e->node) &&
                !std::holds_alternative<expr::BufferLen>(e->node) &&
                !std::holds_alternative<expr::ScalarParam>(e->node) &&
                !std::holds_alternative<expr::Binary>(e->node) &&
                !std::holds_alternative<expr::Unary>(e->node) &&
                !std::holds_alternative<expr::Select>(e->node) &&
                !std::holds_alternative<expr::Cast>(e->node))
                fail(
                    "kernel {}: requirement '{}' reads {}; requirements may use only buffer "
                    "lengths, scalars and constants",
                    kernel.name, r.what, print(e, kernel));
        });
    }
}

}  // namespace kiln::ir
