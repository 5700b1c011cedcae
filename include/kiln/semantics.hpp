// kiln's scalar semantics on the host: the very functions every generated kernel compiles
// (scalar_semantics.h), in namespace kiln::semantics, for the oracle, tests and users.
#pragma once

#include <bit>
#include <cstdint>

namespace kiln::semantics {

#define KILN_FN inline
inline uint32_t kiln_f32_bits(float f) {
    return std::bit_cast<uint32_t>(f);
}
inline float kiln_bits_f32(uint32_t u) {
    return std::bit_cast<float>(u);
}
#include "kiln/scalar_semantics.h"
#undef KILN_FN

inline float f16_to_f32(uint16_t h) {
    return kiln_f16_to_f32(h);
}
inline uint16_t f32_to_f16(float f) {
    return kiln_f32_to_f16(f);
}
inline float bf16_to_f32(uint16_t h) {
    return kiln_bf16_to_f32(h);
}
inline uint16_t f32_to_bf16(float f) {
    return kiln_f32_to_bf16(f);
}

}  // namespace kiln::semantics
