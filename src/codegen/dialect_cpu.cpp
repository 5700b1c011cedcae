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
/* The threads t below `limit` with offset + t < end are those below the result (offset + t
 * never wraps). */
static inline int32_t kiln_threads_below(int64_t end, int64_t offset, int32_t limit) {
    const int64_t n = end - offset;
    return n < 0 ? 0 : (n < limit ? (int32_t)n : limit);
}
/* A block that runs in strips runs KILN_STRIP threads at a time: a vector of 4-byte values
 * (KILN_BYTE_STRIP, a vector of bytes, where codegen/cpu_strip.hpp says). */
#if defined(__AVX512F__)
#define KILN_STRIP 16
#define KILN_BYTE_STRIP 64
#elif defined(__AVX__)
#define KILN_STRIP 8
#define KILN_BYTE_STRIP 32
#else
#define KILN_STRIP 4
#define KILN_BYTE_STRIP 16
#endif
#define KILN_STRIP_END(s, block) \
    ((block) % KILN_STRIP == 0 || (s) + KILN_STRIP < (block) ? (s) + KILN_STRIP : (block))
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
        .tile_through_pointer = true,
        .claim_fault =
            "uint32_t expected = 0u; return __atomic_compare_exchange_n(word, &expected, "
            "site, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);",
        .cold_function = "static __attribute__((noinline, cold))",
    };
    return d;
}

}  // namespace kiln::codegen
