// The CUDA C dialect, compiled by NVRTC. No headers: the prelude declares what kernels use.
#include "codegen/dialect.hpp"

namespace kiln::codegen {

const Dialect& cuda_dialect() {
    static const Dialect d{
        .name = "cuda",
        .prelude = R"(typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define KILN_FN static __device__ __forceinline__
KILN_FN uint32_t kiln_f32_bits(float f) { return __float_as_uint(f); }
KILN_FN float kiln_bits_f32(uint32_t u) { return __uint_as_float(u); }
)",
        .global_space = "",
        .restrict_kw = "__restrict__",
        .shared_space = "__shared__ ",
        .thread_index = "((int32_t)threadIdx.x)",
        .block_index = "((int32_t)blockIdx.x)",
        .grid_size = "((int32_t)gridDim.x)",
        .barrier = "__syncthreads();",
        .warp_barrier = "__syncwarp();",
        .sqrt_f32 = "__fsqrt_rn",
        .fma_f32 = "__fmaf_rn",
        .dp4a = "__dp4a",
        .threads_as_loops = false,
        .has_shuffle = true,
        .warp_size = 32,
        .vector_load = VectorLoad::aligned_or_elements,
        .buffer_alignment = 16,
        .streaming_load = "__ldcs({})",
        .streaming_store = "__stcs({}, {})",
    };
    return d;
}

}  // namespace kiln::codegen
