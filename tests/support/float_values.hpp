// Inputs for the contraction tests (matmul, conv1d, attention): floats of varied magnitude with
// signed zeros in f32, f16 or bf16 (upload and download: support/everywhere.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "everywhere.hpp"
#include "kiln/buffer.hpp"
#include "kiln/interpret.hpp"
#include "kiln/semantics.hpp"

namespace kiln::test {

// f32 values in `t` (f16 and bf16 rounded to nearest even).
inline HostBuffer encode_floats(DType t, const std::vector<float>& values) {
    return HostBuffer{t, semantics::encode_floats(t, values)};
}

// Values of moderate and varied magnitude in `t` (normal * 2^e, e in [-6, 6]), with signed
// zeros mixed in; `scale` multiplies them (a tiny scale makes products underflow).
inline HostBuffer random_values(DType t, size_t count, uint64_t seed, float scale = 1.0f) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
        float v = std::ldexp(nd(rng), static_cast<int>(rng() % 13) - 6) * scale;
        if (i % 37 == 5) v = (i % 2) ? -0.0f : 0.0f;
        values[i] = v;
    }
    return encode_floats(t, values);
}

// Element i of a float buffer (f32, f16 or bf16) as f32.
inline float float_at(const HostBuffer& h, size_t i) {
    if (h.dtype == DType::f32) {
        float v;
        std::memcpy(&v, h.bytes.data() + 4 * i, 4);
        return v;
    }
    uint16_t bits;
    std::memcpy(&bits, h.bytes.data() + 2 * i, 2);
    return h.dtype == DType::f16 ? semantics::f16_to_f32(bits) : semantics::bf16_to_f32(bits);
}

}  // namespace kiln::test
