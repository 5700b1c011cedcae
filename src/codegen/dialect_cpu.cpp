// The C++ dialect for the CPU backend: blocks are calls, threads are loops.
#include "codegen/dialect.hpp"

namespace kiln::codegen {

const Dialect& cpu_dialect() {
    static const Dialect d{
        .name = "cpu",
        .prelude = R"(#include <stdint.h>
#include <string.h>
#include <math.h>
#define KILN_FN static inline
static inline uint32_t kiln_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float kiln_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
)",
        .global_space = "",
        .restrict_kw = "__restrict__",
        .shared_space = "",
        .thread_index = "kiln_t",
        .block_index = "kiln_block",
        .grid_size = "kiln_grid_size",
        .barrier = "",
        .sqrt_f32 = "sqrtf",
        .fma_f32 = "fmaf",
        .dp4a = "kiln_dp4a",
        .entry_abi = EntryAbi::argument_array,
        .threads_as_loops = true,
        .has_shuffle = false,
        .warp_size = 1,
    };
    return d;
}

}  // namespace kiln::codegen
