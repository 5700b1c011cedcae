// Emitter, vector loads and stores: one access per element, CUDA's wide access where aligned
// (known from the index's divisibility, else tested at run time), or OpenCL's vloadN / vstoreN.
#include <fmt/format.h>

#include "codegen/c_types.hpp"
#include "codegen/emitter.hpp"
#include "kiln/error.hpp"

namespace kiln::codegen {

using namespace kiln::ir;

namespace {

// The members of a CUDA vector type (float4 and its kin), in element order.
constexpr const char* kCudaParts[] = {"x", "y", "z", "w"};

// The vector type of `width` elements of a 4-byte t: uint4, int2, float4, ...
std::string vector_type(DType t, size_t width) {
    return fmt::format("{}{}", t == DType::f32 ? "float" : t == DType::i32 ? "int" : "uint", width);
}

// A wide load's type for `width` elements of t: a 4-byte t's vector type; 2-byte elements (f16,
// bf16, held as uint16_t) as OpenCL's ushortN, or on CUDA as width/2 32-bit words, element 2w
// in word w's low half.
std::string load_type(const Dialect& d, DType t, size_t width) {
    if (size_of(t) == 4) return vector_type(t, width);
    if (d.vector_load == VectorLoad::vload) return fmt::format("ushort{}", width);
    return vector_type(DType::u32, width / 2);
}

// The address space of a vector access's pointer: OpenCL pointers name theirs; CUDA's are
// generic (a __shared__ there would declare a shared variable).
std::string vector_space(const Dialect& d, const MemRef& m) {
    return d.vector_load != VectorLoad::vload ? ""
           : m.space == MemSpace::global      ? d.global_space
           : m.space == MemSpace::shared      ? d.shared_space
                                              : "";
}

// CUDA's vector access at kiln_at: `wide` alone where the index is known to be aligned to the
// whole width in every launch (a buffer whose start the runtime aligns, or a tile declared
// aligned, at a multiple of the width), else `wide` behind a run-time test of kiln_at's
// alignment and `elements` otherwise.
void aligned_or_elements(Emitter& e, const MemRef& m, const ExprRef& index, size_t width,
                         const std::function<void()>& wide, const std::function<void()>& elements) {
    const int start = m.space == MemSpace::global   ? e.d.buffer_alignment
                      : m.space == MemSpace::shared ? e.d.tile_alignment
                                                    : 0;
    const size_t bytes = width * static_cast<size_t>(size_of(mem_dtype(e.k, m)));
    const bool known = start >= static_cast<int>(bytes) &&
                       e.divisibility.of(index) % static_cast<int64_t>(width) == 0;
    if (known) {
        wide();
        return;
    }
    e.open(fmt::format("if ((((unsigned long long)kiln_at) & {}ull) == 0ull)", bytes - 1));
    wide();
    --e.depth;
    e.line("} else {");
    ++e.depth;
    elements();
    e.close();
}

}  // namespace

// A vector store: elements index, index+1, ... of the memory take the values, each evaluated
// once (on CUDA, in order, into kiln_v).
void Emitter::store_vector(const stmt::StoreVector& n) {
    const DType t = mem_dtype(k, n.mem);
    const size_t width = n.values.size();
    const bool streaming = streamed(n.mem);
    const std::string vec = vector_type(t, width);
    std::vector<std::string> values;
    for (const auto& v : n.values) values.push_back(expr(v));
    auto element_stores = [&](auto part) {
        for (size_t i = 0; i < width; ++i) {
            const std::string at = fmt::format("kiln_at[{}]", i);
            line(streaming ? fmt::format(fmt::runtime(d.streaming_store), "&" + at, part(i)) + ";"
                           : fmt::format("{} = {};", at, part(i)));
        }
    };
    open("");
    line(fmt::format("{}{}* kiln_at = &{}[{}];", vector_space(d, n.mem), c_mem_type(t), mem(n.mem),
                     expr(n.index)));
    switch (d.vector_load) {
        case VectorLoad::elements:
            element_stores([&](size_t i) { return values[i]; });
            break;
        case VectorLoad::aligned_or_elements: {
            line(fmt::format("const {} kiln_v = make_{}({});", vec, vec, fmt::join(values, ", ")));
            const std::string wide = streaming
                                         ? fmt::format(fmt::runtime(d.streaming_store),
                                                       fmt::format("({}*)kiln_at", vec), "kiln_v") +
                                               ";"
                                         : fmt::format("*({}*)kiln_at = kiln_v;", vec);
            aligned_or_elements(
                *this, n.mem, n.index, width, [&] { line(wide); },
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
    close();
}

// A copying vector store (StoreVector::from) where the dialect copies asynchronously: the
// buffer's 16 bytes go straight into the tile where both addresses are 16-byte aligned (known
// from the indices' divisibility, else tested at run time); otherwise the values are stored.
void Emitter::copy_vector(const stmt::StoreVector& n) {
    const MemRef src = n.from->mem;
    const DType src_type = mem_dtype(k, src);
    auto known = [&](int alignment, const ExprRef& index, DType t) {
        return alignment >= 16 &&
               divisibility.of(index) * static_cast<int64_t>(size_of(t)) % 16 == 0;
    };
    std::vector<std::string> tests;
    if (!known(d.tile_alignment, n.index, mem_dtype(k, n.mem)))
        tests.push_back("((unsigned long long)kiln_to & 15ull) == 0ull");
    if (!known(d.buffer_alignment, n.from->index, src_type))
        tests.push_back("((unsigned long long)kiln_from & 15ull) == 0ull");
    open("");
    line(fmt::format("{}{}* kiln_to = &{}[{}];", vector_space(d, n.mem),
                     c_mem_type(mem_dtype(k, n.mem)), mem(n.mem), expr(n.index)));
    line(fmt::format("const {}{}* kiln_from = &{}[{}];", vector_space(d, src), c_mem_type(src_type),
                     mem(src), expr(n.from->index)));
    const std::string copy = fmt::format("{}(kiln_to, kiln_from);", d.async_copy);
    if (tests.empty()) {
        line(copy);
    } else {
        open(fmt::format("if ({})", fmt::join(tests, " && ")));
        line(copy);
        --depth;
        line("} else {");
        ++depth;
        store_vector(stmt::StoreVector{n.mem, n.index, n.values});
        close();
    }
    close();
}

// A warp's ldmatrix: this lane's row address, the words of each matrix into the locals.
void Emitter::load_matrix(const stmt::LoadMatrix& n) {
    if (divisibility.of(n.row) % 4 != 0)
        fail(
            "kernel {}: an ldmatrix row ({}) not known to be a multiple of 4 words; expected "
            "16-byte aligned rows",
            k.name, expr(n.row));
    std::vector<std::string> outs;
    for (int l : n.locals) outs.push_back(local(l));
    line(fmt::format("kiln_ldmatrix{}_x{}({}, &{}[{}]);", n.trans ? "_trans" : "", n.locals.size(),
                     fmt::join(outs, ", "), mem(n.mem), expr(n.row)));
}

// A vector load: the locals take elements index, index+1, ... of the memory.
void Emitter::load_vector(const stmt::LoadVector& n) {
    const DType t = mem_dtype(k, n.mem);
    const size_t width = n.locals.size();
    auto from = [&](const std::string& base) {
        for (size_t i = 0; i < width; ++i)
            line(fmt::format("{} = {};", local(n.locals[i]),
                             hinted_load(n.mem, fmt::format("{}[{}]", base, i))));
    };
    const std::string vec = load_type(d, t, width);
    const bool halves = size_of(t) == 2;
    open("");
    line(fmt::format("const {}{}* kiln_at = &{}[{}];", vector_space(d, n.mem), c_mem_type(t),
                     mem(n.mem), expr(n.index)));
    switch (d.vector_load) {
        case VectorLoad::elements:
            from("kiln_at");
            break;
        case VectorLoad::aligned_or_elements: {
            auto wide = [&] {
                line(fmt::format("const {} kiln_v = {};", vec,
                                 load_at(n.mem, fmt::format("(const {}*)kiln_at", vec))));
                for (size_t i = 0; i < width; ++i)
                    line(halves
                             ? fmt::format("{} = (uint16_t)(kiln_v.{} >> {});", local(n.locals[i]),
                                           kCudaParts[i / 2], 16 * (i % 2))
                             : fmt::format("{} = kiln_v.{};", local(n.locals[i]), kCudaParts[i]));
            };
            aligned_or_elements(*this, n.mem, n.index, width, wide, [&] { from("kiln_at"); });
            break;
        }
        case VectorLoad::vload:
            line(fmt::format("const {} kiln_v = vload{}(0, kiln_at);", vec, width));
            for (size_t i = 0; i < width; ++i)
                line(fmt::format("{} = kiln_v.s{};", local(n.locals[i]), i));
            break;
    }
    close();
}

}  // namespace kiln::codegen
