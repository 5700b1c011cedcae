// The pieces the ops build their kernels from (kernel_parts.hpp).
#include "ops/kernel_parts.hpp"

#include <bit>

#include "kiln/error.hpp"

namespace kiln::ops {

ElementRead buffer_elements(const Memory& buffer) {
    ElementRead read([buffer](const Expr& e) { return buffer[e]; });
    read.buffer = buffer;
    return read;
}

bool is_input_float(DType t) {
    return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

Expr to_f32(const Expr& e) {
    return e.type() == DType::f32 ? e : cast(DType::f32, e);
}

Expr half_scale(const Expr& half_bits) {
    return cast(DType::f32, bitcast(DType::f16, half_bits));
}

std::vector<Expr> read_run(KernelBuilder& k, const Memory& tile, const Expr& at, int count,
                           const char* name) {
    std::vector<Expr> out;
    const int width = count % 4 == 0 ? 4 : (count % 2 == 0 ? 2 : 1);
    for (int g = 0; g < count; g += width) {
        if (width == 1) {
            out.push_back(k.let(tile[at + g], name));
            continue;
        }
        for (const Var& v : k.load_vector(tile, at + g, width, name)) out.push_back(v);
    }
    return out;
}

void check_row_threads(const char* op, int threads, int lanes, int block) {
    if (threads < 1 || !std::has_single_bit(static_cast<unsigned>(threads)) || threads > lanes ||
        block % threads != 0)
        fail(
            "{}: schedule threads per row {}; expected a power of two up to {} that divides the "
            "block size {}",
            op, threads, lanes, block);
}

}  // namespace kiln::ops
