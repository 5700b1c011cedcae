// The OpenCL C 1.2 dialect. Built with -cl-fp32-correctly-rounded-divide-sqrt, no mad.
#include "codegen/dialect.hpp"

namespace kiln::codegen {

const Dialect& opencl_dialect() {
    static const Dialect d{
        .name = "opencl",
        .prelude = R"(#pragma OPENCL FP_CONTRACT OFF
typedef char int8_t;
typedef uchar uint8_t;
typedef ushort uint16_t;
typedef int int32_t;
typedef uint uint32_t;
typedef long int64_t;
typedef ulong uint64_t;
#define KILN_FN static inline
KILN_FN uint32_t kiln_f32_bits(float f) { return as_uint(f); }
KILN_FN float kiln_bits_f32(uint32_t u) { return as_float(u); }
)",
        .global_space = "__global ",
        .restrict_kw = "restrict",
        .shared_space = "__local ",
        .memory_array = "volatile ",
        .thread_index = "((int32_t)get_local_id(0))",
        .block_index = "((int32_t)get_group_id(0))",
        .grid_size = "((int32_t)get_num_groups(0))",
        .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
        .sqrt_f32 = "sqrt",
        .fma_f32 = "fma",
        .dp4a = "kiln_dp4a",
        .entry_abi = EntryAbi::opencl_kernel,
        .threads_as_loops = false,
        .has_shuffle = false,
        .warp_size = 1,
        .vector_load = VectorLoad::vload,
        .split_if_else = true,
        .opaque_block_index = true,
        .claim_fault = "return atomic_cmpxchg(word, 0u, site) == 0u;",
        // Inlined: PoCL 5 computed wrong results in kernels with barriers that call a
        // noinline function (matvec_q8 w128_v1_r1 in checked mode).
        .cold_function = "static inline",
    };
    return d;
}

}  // namespace kiln::codegen
