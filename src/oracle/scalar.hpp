// Scalar<T>: kiln's arithmetic for one dtype in plain C++, for the oracle. f16/bf16 compute in
// f32 and round back after every operation; integers wrap; division, shifts, casts and min/max
// follow scalar_semantics.h. Every oracle is written once as a template over these.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kiln/dtype.hpp"
#include "kiln/semantics.hpp"

namespace kiln::oracle {

template <DType T>
struct Scalar;

// Floats: f32 directly; f16/bf16 through f32 with rounding after each op.
template <DType T>
struct FloatScalar {
    static constexpr bool is_float = true;
    using V = std::conditional_t<T == DType::f32, float, uint16_t>;
    static float to_f32(V v) {
        if constexpr (T == DType::f32)
            return v;
        else if constexpr (T == DType::f16)
            return semantics::f16_to_f32(v);
        else
            return semantics::bf16_to_f32(v);
    }
    static V from_f32(float f) {
        if constexpr (T == DType::f32)
            return f;
        else if constexpr (T == DType::f16)
            return semantics::f32_to_f16(f);
        else
            return semantics::f32_to_bf16(f);
    }
    static V add(V a, V b) { return from_f32(to_f32(a) + to_f32(b)); }
    static V sub(V a, V b) { return from_f32(to_f32(a) - to_f32(b)); }
    static V mul(V a, V b) { return from_f32(to_f32(a) * to_f32(b)); }
    static V div(V a, V b) { return from_f32(to_f32(a) / to_f32(b)); }
    static V fma(V a, V b, V c) { return from_f32(std::fma(to_f32(a), to_f32(b), to_f32(c))); }
    static V min(V a, V b) { return from_f32(semantics::kiln_min_f32(to_f32(a), to_f32(b))); }
    static V max(V a, V b) { return from_f32(semantics::kiln_max_f32(to_f32(a), to_f32(b))); }
    static V neg(V a) { return from_f32(-to_f32(a)); }
    static V sqrt(V a) { return from_f32(std::sqrt(to_f32(a))); }
    static V abs(V a) {
        if constexpr (T == DType::f32)
            return semantics::kiln_bits_f32(semantics::kiln_f32_bits(a) & 0x7fffffffu);
        else
            return static_cast<V>(a & 0x7fff);
    }
    static bool lt(V a, V b) { return to_f32(a) < to_f32(b); }
    static bool eq(V a, V b) { return to_f32(a) == to_f32(b); }
    static V constant(double v) { return from_f32(static_cast<float>(v)); }
};
template <>
struct Scalar<DType::f32> : FloatScalar<DType::f32> {};
template <>
struct Scalar<DType::f16> : FloatScalar<DType::f16> {};
template <>
struct Scalar<DType::bf16> : FloatScalar<DType::bf16> {};

// Integers: wrapping arithmetic through the unsigned type of the same width.
template <DType T, typename S, typename U>
struct IntScalar {
    static constexpr bool is_float = false;
    using V = S;
    static V add(V a, V b) {
        return static_cast<V>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
    static V sub(V a, V b) {
        return static_cast<V>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    }
    static V mul(V a, V b) {
        return static_cast<V>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    }
    static V neg(V a) { return static_cast<V>(static_cast<U>(U{0} - static_cast<U>(a))); }
    static V min(V a, V b) { return a < b ? a : b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static V shl(V a, V b) {
        constexpr int w = sizeof(V) * 8;
        return static_cast<V>(static_cast<U>(static_cast<U>(a) << (static_cast<U>(b) & (w - 1))));
    }
    static V shr(V a, V b) {
        constexpr int w = sizeof(V) * 8;
        return static_cast<V>(a >> (static_cast<U>(b) & (w - 1)));
    }
    static bool lt(V a, V b) { return a < b; }
    static bool eq(V a, V b) { return a == b; }
    static V constant(double v) { return static_cast<V>(static_cast<int64_t>(v)); }
};
template <>
struct Scalar<DType::i8> : IntScalar<DType::i8, int8_t, uint8_t> {
    static V div(V a, V b) { return semantics::kiln_div_i8(a, b); }
    static V rem(V a, V b) { return semantics::kiln_rem_i8(a, b); }
};
template <>
struct Scalar<DType::u8> : IntScalar<DType::u8, uint8_t, uint8_t> {
    static V div(V a, V b) { return semantics::kiln_div_u8(a, b); }
    static V rem(V a, V b) { return semantics::kiln_rem_u8(a, b); }
};
template <>
struct Scalar<DType::i32> : IntScalar<DType::i32, int32_t, uint32_t> {
    static V div(V a, V b) { return semantics::kiln_div_i32(a, b); }
    static V rem(V a, V b) { return semantics::kiln_rem_i32(a, b); }
};
template <>
struct Scalar<DType::u32> : IntScalar<DType::u32, uint32_t, uint32_t> {
    static V div(V a, V b) { return semantics::kiln_div_u32(a, b); }
    static V rem(V a, V b) { return semantics::kiln_rem_u32(a, b); }
};
template <>
struct Scalar<DType::i64> : IntScalar<DType::i64, int64_t, uint64_t> {
    static V div(V a, V b) { return semantics::kiln_div_i64(a, b); }
    static V rem(V a, V b) { return semantics::kiln_rem_i64(a, b); }
};

// Runs f.template operator()<T>() for a runtime dtype; bool runs as u8 (stored as a byte).
template <typename F>
decltype(auto) dispatch(DType t, F&& f) {
    return visit_dtype(t == DType::boolean ? DType::u8 : t, [&]<DType T>() -> decltype(auto) {
        if constexpr (T == DType::boolean)
            return f.template operator()<DType::u8>();
        else
            return f.template operator()<T>();
    });
}

// Typed access to raw element bytes.
template <typename V>
V load(const std::vector<uint8_t>& bytes, size_t i) {
    V v;
    std::memcpy(&v, bytes.data() + i * sizeof(V), sizeof(V));
    return v;
}
template <typename V>
void store(std::vector<uint8_t>& bytes, size_t i, V v) {
    std::memcpy(bytes.data() + i * sizeof(V), &v, sizeof(V));
}

}  // namespace kiln::oracle
