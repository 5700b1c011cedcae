// kiln's scalar semantics on the host: the very functions every generated kernel compiles
// (scalar_semantics.h), in namespace kiln::semantics, for the oracle, tests and users.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "kiln/dtype.hpp"

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

// `values` as the bytes of t (f32 as they are; f16 and bf16 rounded to nearest even), for
// Buffer::upload_bytes. Any other t is the caller's error: only these three are floats.
inline std::vector<uint8_t> encode_floats(DType t, std::span<const float> values) {
    std::vector<uint8_t> bytes(values.size() * (t == DType::f32 ? 4 : 2));
    for (size_t i = 0; i < values.size(); ++i) {
        if (t == DType::f32) {
            std::memcpy(bytes.data() + 4 * i, &values[i], 4);
            continue;
        }
        const uint16_t h = t == DType::f16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    return bytes;
}

}  // namespace kiln::semantics
