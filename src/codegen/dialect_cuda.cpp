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
// Loads that ask L1 and L2 to keep the line (evict_last), for buffers marked keep_cached.
#define KILN_KEEP(type, reg, ...) \
  asm("{ .reg .b64 kiln_pol; createpolicy.fractional.L2::evict_last.b64 kiln_pol, 1.0; " \
      "ld.global.L1::evict_last.L2::cache_hint." type " " reg ", kiln_pol; }" : __VA_ARGS__ : "l"(p))
KILN_FN float kiln_keep(const float* p) { float v; KILN_KEEP("f32", "%0, [%1]", "=f"(v)); return v; }
KILN_FN uint32_t kiln_keep(const uint32_t* p) { uint32_t v; KILN_KEEP("b32", "%0, [%1]", "=r"(v)); return v; }
KILN_FN int32_t kiln_keep(const int32_t* p) { return (int32_t)kiln_keep((const uint32_t*)p); }
KILN_FN uint16_t kiln_keep(const uint16_t* p) { unsigned short v; KILN_KEEP("b16", "%0, [%1]", "=h"(v)); return v; }
KILN_FN uint8_t kiln_keep(const uint8_t* p) { uint32_t v; KILN_KEEP("u8", "%0, [%1]", "=r"(v)); return (uint8_t)v; }
KILN_FN int8_t kiln_keep(const int8_t* p) { return (int8_t)kiln_keep((const uint8_t*)p); }
KILN_FN int64_t kiln_keep(const int64_t* p) { unsigned long long v; KILN_KEEP("b64", "%0, [%1]", "=l"(v)); return (int64_t)v; }
KILN_FN uint2 kiln_keep(const uint2* p) { uint2 v; KILN_KEEP("v2.b32", "{%0, %1}, [%2]", "=r"(v.x), "=r"(v.y)); return v; }
KILN_FN uint4 kiln_keep(const uint4* p) { uint4 v; KILN_KEEP("v4.b32", "{%0, %1, %2, %3}, [%4]", "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)); return v; }
KILN_FN int2 kiln_keep(const int2* p) { const uint2 u = kiln_keep((const uint2*)p); return make_int2((int)u.x, (int)u.y); }
KILN_FN int4 kiln_keep(const int4* p) { const uint4 u = kiln_keep((const uint4*)p); return make_int4((int)u.x, (int)u.y, (int)u.z, (int)u.w); }
KILN_FN float2 kiln_keep(const float2* p) { const uint2 u = kiln_keep((const uint2*)p); return make_float2(__uint_as_float(u.x), __uint_as_float(u.y)); }
KILN_FN float4 kiln_keep(const float4* p) { const uint4 u = kiln_keep((const uint4*)p); return make_float4(__uint_as_float(u.x), __uint_as_float(u.y), __uint_as_float(u.z), __uint_as_float(u.w)); }
// kiln::device_exp2: the ex2 unit's 2^x (within 2 ulp, subnormal results flushed to zero).
KILN_FN float kiln_ex2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
// f32 to f16 / bf16 bits by one cvt (round to nearest, ties to even, as the semantics file
// rounds), and two of them packed into a u32 by one cvt (the first in the low half). cvt does
// not keep a NaN's payload, the semantics file does: f16 takes a NaN through the semantics
// file's conversion out of line; bf16 selects its rule's result (the top half of the f32 bits,
// quieted) without a branch (branches around every pack cost more than the select).
KILN_FN uint16_t kiln_f32_to_f16(float f);
static __device__ __noinline__ uint32_t kiln_f16_halves_with_nan(float lo, float hi) {
  return (uint32_t)kiln_f32_to_f16(lo) | ((uint32_t)kiln_f32_to_f16(hi) << 16);
}
#if __CUDA_ARCH__ >= 800
KILN_FN uint16_t kiln_cvt_f16(float f) {
  if (f != f) return (uint16_t)kiln_f16_halves_with_nan(f, 0.0f);
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
KILN_FN uint32_t kiln_pack_f16x2(float lo, float hi) {
  if (lo != lo || hi != hi) return kiln_f16_halves_with_nan(lo, hi);
  uint32_t r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
KILN_FN uint16_t kiln_cvt_bf16(float f) {
  unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return f != f ? (uint16_t)((kiln_f32_bits(f) >> 16) | 0x0040u) : h;
}
KILN_FN uint32_t kiln_pack_bf16x2(float lo, float hi) {
  uint32_t r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  const uint32_t quiet = __byte_perm(kiln_f32_bits(lo), kiln_f32_bits(hi), 0x7632) | 0x00400040u;
  if (lo != lo) r = (r & 0xffff0000u) | (quiet & 0xffffu);
  if (hi != hi) r = (r & 0xffffu) | (quiet & 0xffff0000u);
  return r;
}
#else
#define kiln_cvt_f16 kiln_f32_to_f16
#define kiln_cvt_bf16 kiln_f32_to_bf16
#define kiln_pack_f16x2(lo, hi) \
  ((uint32_t)kiln_f32_to_f16(lo) | ((uint32_t)kiln_f32_to_f16(hi) << 16))
#define kiln_pack_bf16x2(lo, hi) \
  ((uint32_t)kiln_f32_to_bf16(lo) | ((uint32_t)kiln_f32_to_bf16(hi) << 16))
#endif
#if __CUDA_ARCH__ >= 800
// One warp's mma.m16n8k16 with f32 accumulators (ir::stmt::Mma): d = a * b + d.
#define KILN_MMA(name, type) \
  KILN_FN void name(float& d0, float& d1, float& d2, float& d3, uint32_t a0, uint32_t a1, \
                    uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) { \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 " \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" \
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1)); \
  }
KILN_MMA(kiln_mma_f16, "f16")
KILN_MMA(kiln_mma_bf16, "bf16")
// Asynchronous 16-byte copies into shared memory (ir::StoreVector::from): each barrier closes
// the thread's group of copies and waits until at most n groups are in flight.
KILN_FN uint32_t kiln_shared_address(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
KILN_FN void kiln_copy16(void* tile, const void* buffer) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(kiln_shared_address(tile)), "l"(buffer) : "memory");
}
#define kiln_copies_wait(n) asm volatile("cp.async.commit_group;\ncp.async.wait_group " #n ";" ::: "memory")
// A warp's ldmatrix (ir::stmt::LoadMatrix): this lane's row address in, its words out.
#define KILN_LDMATRIX(name, shape) \
  KILN_FN void name##_x1(uint32_t& r0, const uint32_t* row) { \
    asm volatile("ldmatrix.sync.aligned.m8n8.x1" shape ".shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(kiln_shared_address(row))); \
  } \
  KILN_FN void name##_x2(uint32_t& r0, uint32_t& r1, const uint32_t* row) { \
    asm volatile("ldmatrix.sync.aligned.m8n8.x2" shape ".shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(kiln_shared_address(row))); \
  } \
  KILN_FN void name##_x4(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, const uint32_t* row) { \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4" shape ".shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(kiln_shared_address(row))); \
  }
KILN_LDMATRIX(kiln_ldmatrix, "")
KILN_LDMATRIX(kiln_ldmatrix_trans, ".trans")
#endif
)",
        .global_space = "",
        .restrict_kw = "__restrict__",
        .shared_space = "__shared__ ",
        .memory_array = "volatile ",
        .thread_index = "((int32_t)threadIdx.x)",
        .block_index = "((int32_t)blockIdx.x)",
        .grid_size = "((int32_t)gridDim.x)",
        .barrier = "__syncthreads();",
        .warp_barrier = "__syncwarp();",
        .sqrt_f32 = "__fsqrt_rn",
        .device_exp2 = "kiln_ex2",
        .fma_f32 = "__fmaf_rn",
        .dp4a = "__dp4a",
        .f32_to_f16 = "kiln_cvt_f16",
        .f32_to_bf16 = "kiln_cvt_bf16",
        .pack_halves = "kiln_pack_{}x2",
        .entry_abi = EntryAbi::cuda_global,
        .threads_as_loops = false,
        .has_shuffle = true,
        .has_mma = true,
        .async_copy = "kiln_copy16",
        .async_wait = "kiln_copies_wait({});",
        .warp_size = 32,
        .vector_load = VectorLoad::aligned_or_elements,
        .buffer_alignment = 16,
        .tile_alignment = 16,
        .tile_align = "__align__(16) ",
        .streaming_load = "__ldcs({})",
        .streaming_store = "__stcs({}, {})",
        .keep_load = "kiln_keep({})",
        .claim_fault = "return atomicCAS(word, 0u, site) == 0u;",
        .cold_function = "static __device__ __noinline__",
    };
    return d;
}

}  // namespace kiln::codegen
