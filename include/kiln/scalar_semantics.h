/* kiln's scalar semantics, written once in the common subset of C, C++, CUDA C and OpenCL C.
 *
 * This file is compiled into every generated kernel (after the dialect's prelude, which defines
 * KILN_FN, the fixed-width integer names and kiln_f32_bits / kiln_bits_f32) and into the host
 * oracle, so the meaning of every conversion and every edge case is the same everywhere:
 *   - f16 / bf16 are stored as uint16_t; conversions round to nearest, ties to even; a NaN stays
 *     a quiet NaN with its sign and top payload bits; overflow gives +-inf.
 *   - integer / and % never trap: x / 0 == 0, x % 0 == x, MIN / -1 == MIN, MIN % -1 == 0.
 *   - shifts take the count modulo the width; >> of a signed value is arithmetic.
 *   - float -> integer truncates toward zero and saturates at the type's range; NaN gives 0.
 *   - min(a, b) is (a < b || a is NaN) ? a : b; max(a, b) is (a > b || a is NaN) ? a : b,
 *     so a NaN in either operand gives a NaN.
 * NaN payloads are not part of the contract: arithmetic that makes a NaN may give any NaN. */
#ifndef KILN_SCALAR_SEMANTICS_H
#define KILN_SCALAR_SEMANTICS_H

KILN_FN float kiln_f16_to_f32(uint16_t h) {
    /* Branch-free, so a kernel converting many scales keeps its instructions in one stream. */
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = (uint32_t)h & 0x7c00u;
    uint32_t em = ((uint32_t)h & 0x7fffu) << 13; /* exponent and mantissa in f32's places */
#if defined(__F16C__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__OPENCL_VERSION__)
    /* x86 with F16C (a CPU kernel built for such a CPU): its conversion, exact for every finite
     * half; inf and NaN as below (F16C would quiet a signalling NaN). */
    {
        typedef short kiln_v8hi __attribute__((vector_size(16)));
        kiln_v8hi v = {(short)h, 0, 0, 0, 0, 0, 0, 0};
        float converted = __builtin_ia32_vcvtph2ps(v)[0];
        return e == 0x7c00u ? kiln_bits_f32(sign | (em + 0x70000000u)) : converted;
    }
#endif
    /* normal: rebias the exponent from 15 to 127; inf or NaN: 31 + 224 == 255, payload kept */
    uint32_t normal_bits = em + (e == 0x7c00u ? 0x70000000u : 0x38000000u);
    /* zero or subnormal: 2^-14 * (1 + m/1024) - 2^-14 == m * 2^-24, exact and never subnormal */
    uint32_t subnormal_bits = kiln_f32_bits(kiln_bits_f32(em | 0x38800000u) - 6.103515625e-05f);
    return kiln_bits_f32(sign | (e == 0u ? subnormal_bits : normal_bits));
}

KILN_FN uint16_t kiln_f32_to_f16(float f) {
    uint32_t x = kiln_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;
    uint32_t h;
    if (a > 0x7f800000u) {
        h = 0x7e00u | ((a >> 13) & 0x3ffu); /* NaN: quiet, top payload bits kept */
    } else if (a >= 0x477ff000u) {
        h = 0x7c00u; /* at or past the midpoint between 65504 and 65536: inf */
    } else if (a >= 0x38800000u) {
        uint32_t m = a - 0x38000000u; /* normal half: rebias the exponent from 127 to 15 */
        h = (m + 0x0fffu + ((m >> 13) & 1u)) >> 13;
    } else {
        /* subnormal half or zero: adding 0.5 makes the FPU round at 2^-24, ties to even */
        h = kiln_f32_bits(kiln_bits_f32(a) + 0.5f) - 0x3f000000u;
    }
    return (uint16_t)(sign | h);
}

KILN_FN float kiln_bf16_to_f32(uint16_t h) {
    return kiln_bits_f32((uint32_t)h << 16);
}

KILN_FN uint16_t kiln_f32_to_bf16(float f) {
    uint32_t x = kiln_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#define KILN_SIGNED_DIV(T, U, S)                                                \
    KILN_FN T kiln_div_##S(T a, T b) {                                          \
        return b == (T)0 ? (T)0 : (b == (T)-1 ? (T)((U)0 - (U)a) : (T)(a / b)); \
    }                                                                           \
    KILN_FN T kiln_rem_##S(T a, T b) {                                          \
        return b == (T)0 ? a : (b == (T)-1 ? (T)0 : (T)(a % b));                \
    }
#define KILN_UNSIGNED_DIV(T, S)               \
    KILN_FN T kiln_div_##S(T a, T b) {        \
        return b == (T)0 ? (T)0 : (T)(a / b); \
    }                                         \
    KILN_FN T kiln_rem_##S(T a, T b) {        \
        return b == (T)0 ? a : (T)(a % b);    \
    }
KILN_SIGNED_DIV(int8_t, uint8_t, i8)
KILN_SIGNED_DIV(int32_t, uint32_t, i32)
KILN_SIGNED_DIV(int64_t, uint64_t, i64)
KILN_UNSIGNED_DIV(uint8_t, u8)
KILN_UNSIGNED_DIV(uint32_t, u32)
KILN_UNSIGNED_DIV(uint64_t, u64)
#undef KILN_SIGNED_DIV
#undef KILN_UNSIGNED_DIV

/* float -> integer: truncate toward zero, saturate, NaN -> 0. lo and hi_excl are the type's
 * minimum and 2^bits (or 2^(bits-1)), both exact in f32. */
#define KILN_F2I(T, S, LO, HI_EXCL, MAXV)                                                   \
    KILN_FN T kiln_f32_to_##S(float x) {                                                    \
        return x != x ? (T)0 : (x <= (LO) ? (T)(LO) : (x >= (HI_EXCL) ? (T)(MAXV) : (T)x)); \
    }
KILN_F2I(int8_t, i8, -128.0f, 128.0f, 127)
KILN_F2I(uint8_t, u8, 0.0f, 256.0f, 255u)
KILN_F2I(int32_t, i32, -2147483648.0f, 2147483648.0f, 2147483647)
KILN_F2I(uint32_t, u32, 0.0f, 4294967296.0f, 4294967295u)
KILN_F2I(int64_t, i64, -9223372036854775808.0f, 9223372036854775808.0f, 9223372036854775807)
#undef KILN_F2I

KILN_FN float kiln_min_f32(float a, float b) {
    return (a < b || a != a) ? a : b;
}
KILN_FN float kiln_max_f32(float a, float b) {
    return (a > b || a != a) ? a : b;
}
/* The same min and max where one operand is known not to be NaN (a constant): _a when a is,
 * _b when b is. One comparison each, which vector units do as one min / max (_a: x86's minps /
 * maxps exactly) or a compare and a blend; the general form's NaN test costs more per lane. A
 * known b other than +-0 is the same as a known a with the operands swapped (equal values then
 * have the same bits), which the emitter writes so. */
KILN_FN float kiln_min_f32_a(float a, float b) {
    return a < b ? a : b;
}
KILN_FN float kiln_min_f32_b(float a, float b) {
    return b <= a ? b : a;
}
KILN_FN float kiln_max_f32_a(float a, float b) {
    return a > b ? a : b;
}
KILN_FN float kiln_max_f32_b(float a, float b) {
    return b >= a ? b : a;
}
#define KILN_INT_MINMAX(T, S)          \
    KILN_FN T kiln_min_##S(T a, T b) { \
        return a < b ? a : b;          \
    }                                  \
    KILN_FN T kiln_max_##S(T a, T b) { \
        return a > b ? a : b;          \
    }
KILN_INT_MINMAX(int8_t, i8)
KILN_INT_MINMAX(uint8_t, u8)
KILN_INT_MINMAX(int32_t, i32)
KILN_INT_MINMAX(uint32_t, u32)
KILN_INT_MINMAX(int64_t, i64)
#undef KILN_INT_MINMAX

/* c + the dot product of the four signed bytes of a and b, wrapping (CUDA's __dp4a). */
KILN_FN int32_t kiln_dp4a(int32_t a, int32_t b, int32_t c) {
    uint32_t acc = (uint32_t)c;
    for (int k = 0; k < 4; ++k)
        acc += (uint32_t)((int32_t)(int8_t)(uint8_t)((uint32_t)a >> (8 * k)) *
                          (int32_t)(int8_t)(uint8_t)((uint32_t)b >> (8 * k)));
    return (int32_t)acc;
}

#endif /* KILN_SCALAR_SEMANTICS_H */
