// Emitter, statements: structured C for every statement kind, and the declarations of locals,
// per-thread arrays and shared tiles.
#include <fmt/format.h>

#include "codegen/c_types.hpp"
#include "codegen/emitter.hpp"
#include "ir/visit.hpp"
#include "kiln/error.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

void Emitter::line(const std::string& s) {
    out.append(static_cast<size_t>(depth) * 4, ' ');
    out += s;
    out += '\n';
}

void Emitter::open(const std::string& head) {
    line(head.empty() ? "{" : head + " {");
    ++depth;
}

void Emitter::close() {
    --depth;
    line("}");
}

void Emitter::for_loop(const stmt::For& n, const std::function<void()>& body) {
    named.clear();
    const std::string v = local(n.local), step = expr(n.step);
    const DType t = n.begin->type;
    const std::string next =
        !no_wrap || no_wrap->steps.count(n.local)
            ? fmt::format("{} += {}", v, step)
            : fmt::format("{0} = ({1})(({2}){0} + ({2}){3})", v, c_type(t), c_unsigned(t), step);
    open(fmt::format("for ({0} = {1}; {0} < {2}; {3})", v, expr(n.begin), expr(n.end), next));
    body();
    close();
}

void Emitter::if_else(const stmt::If& n, const std::function<void()>& then_body,
                      const std::function<void()>& else_body) {
    name_shared({n.cond});
    if (n.else_body && split_if_else) {
        const std::string c = fmt::format("kiln_c{}", temp_counter++);
        line(fmt::format("volatile const int {} = {};", c, condition(n.cond)));
        named.clear();
        open(fmt::format("if ({})", c));
        then_body();
        close();
        open(fmt::format("if (!{})", c));
        else_body();
        close();
        return;
    }
    open(fmt::format("if ({})", condition(n.cond)));
    named.clear();
    then_body();
    if (n.else_body) {
        --depth;
        line("} else {");
        ++depth;
        else_body();
    }
    close();
}

void Emitter::stmt(const StmtRef& s) {
    if (!s) return;
    std::visit(
        [&](const auto& n) {
            using N = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<N, stmt::Seq>) {
                for (const auto& i : n.items) stmt(i);
            } else if constexpr (std::is_same_v<N, stmt::Let> || std::is_same_v<N, stmt::Assign>) {
                name_shared({n.value});
                line(fmt::format("{} = {};", local(n.local), expr(n.value)));
                named.clear();
            } else if constexpr (std::is_same_v<N, stmt::Store>) {
                name_shared({n.index, n.value});
                const std::string at = fmt::format("{}[{}]", mem(n.mem), expr(n.index));
                std::string value = expr(n.value);
                if (mem_dtype(k, n.mem) == DType::boolean) value = "(uint8_t)(" + value + ")";
                if (streamed(n.mem))
                    line(fmt::format(fmt::runtime(d.streaming_store), "&" + at, value) + ";");
                else
                    line(fmt::format("{} = {};", at, value));
                named.clear();
            } else if constexpr (std::is_same_v<N, stmt::For>) {
                for_loop(n, [&] { stmt(n.body); });
            } else if constexpr (std::is_same_v<N, stmt::If>) {
                if_else(
                    n, [&] { stmt(n.then_body); }, [&] { stmt(n.else_body); });
            } else if constexpr (std::is_same_v<N, stmt::Barrier>) {
                if (copies_async && !n.warp)
                    line(fmt::format(fmt::runtime(d.async_wait), n.copies_in_flight));
                line(n.warp && !d.warp_barrier.empty() ? d.warp_barrier : d.barrier);
            } else if constexpr (std::is_same_v<N, stmt::LoadVector>) {
                name_shared({n.index});
                load_vector(n);
                named.clear();
            } else if constexpr (std::is_same_v<N, stmt::StoreVector>) {
                std::vector<ExprRef> roots = n.values;
                roots.push_back(n.index);
                if (n.from) roots.push_back(n.from->index);
                name_shared(roots);
                if (n.from && copies_async)
                    copy_vector(n);
                else
                    store_vector(n);
                named.clear();
            } else if constexpr (std::is_same_v<N, stmt::Mma>) {
                mma(n);
            } else if constexpr (std::is_same_v<N, stmt::LoadMatrix>) {
                name_shared({n.row});
                load_matrix(n);
                named.clear();
            } else {
                fail("kernel {}: fold reached the emitter unlowered", k.name);
            }
        },
        s->node);
}

bool Emitter::has_copies(const Kernel& kernel) {
    return contains(kernel.body, [](const StmtNode& n) {
        const auto* s = std::get_if<stmt::StoreVector>(&n.node);
        return s && s->from;
    });
}

void Emitter::mma(const stmt::Mma& n) {
    std::vector<ExprRef> roots = n.a;
    roots.insert(roots.end(), n.b.begin(), n.b.end());
    name_shared(roots);
    std::string args;
    for (int l : n.acc) args += local(l) + ", ";
    for (const auto& v : roots) args += expr(v) + (&v == &roots.back() ? "" : ", ");
    line(fmt::format("kiln_mma_{}({});", name(n.input), args));
    named.clear();
}

void Emitter::declare_locals(const std::function<bool(int)>& which) {
    for (size_t i = 0; i < k.locals.size(); ++i) {
        const int id = static_cast<int>(i);
        if (!which(id)) continue;
        const char* t = c_type(k.locals[i].type);
        if (plan && plan->local_home[i] == Home::per_thread)
            line(fmt::format("{} v{}[{}];", t, i, per_thread_count()));
        else
            line(fmt::format("{} v{};", t, i));
    }
}

void Emitter::declare_arrays(const std::function<bool(int)>& which, bool per_thread) {
    for (size_t i = 0; i < k.arrays.size(); ++i) {
        if (!which(static_cast<int>(i))) continue;
        const auto& a = k.arrays[i];
        const std::string type = (a.in_memory ? d.memory_array : "") + c_mem_type(a.type);
        if (per_thread)
            line(fmt::format("{} la{}[{}][{}];", type, i, per_thread_count(), a.size));
        else
            line(fmt::format("{} la{}[{}];", type, i, a.size));
    }
}

std::string Emitter::per_thread_count() const {
    return plan && plan->strips ? "KILN_STRIP" : std::to_string(k.block_size);
}

void Emitter::declare_block_index() {
    if (!opaque_block_index) return;
    line(fmt::format("volatile int32_t kiln_block_read = {};", d.block_index));
    line("const int32_t kiln_block_index = kiln_block_read;");
}

void Emitter::declare_tiles() {
    for (size_t i = 0; i < k.tiles.size(); ++i) {
        const std::string type = c_mem_type(k.tiles[i].type);
        const std::string suffix = d.tile_through_pointer ? "_tile" : "";
        line(fmt::format("{}{}{} sh{}{}[{}];", d.shared_space, d.tile_align, type, i, suffix,
                         k.tiles[i].size));
        if (d.tile_through_pointer)
            line(fmt::format("{}* {} const sh{} = sh{}_tile;", type, d.restrict_kw, i, i));
    }
}

}  // namespace kiln::codegen
