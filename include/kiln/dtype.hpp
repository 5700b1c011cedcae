// Element types of kiln kernels. f16 and bf16 are storage types: arithmetic on them computes in
// f32 and rounds to nearest-even after every operation (docs/numerics.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

enum class DType : uint8_t { f32, f16, bf16, i8, u8, i32, u32, i64, boolean };

inline constexpr DType all_dtypes[] = {DType::f32, DType::f16, DType::bf16,
                                       DType::i8,  DType::u8,  DType::i32,
                                       DType::u32, DType::i64, DType::boolean};

std::string_view name(DType t);            // "f32", "bf16", "bool", ...
DType parse_dtype(std::string_view name);  // inverse of name(); kiln::Error when unknown
size_t size_of(DType t);                   // bytes per element in memory
bool is_float(DType t);                    // f32, f16, bf16
bool is_half(DType t);                     // f16, bf16 (storage-only floats)
bool is_integer(DType t);                  // i8 u8 i32 u32 i64 (not bool)
bool is_signed(DType t);                   // i8 i32 i64 and the floats
int bits_of(DType t);                      // width in bits (bool: 8, as stored)
DType storage_uint(DType t);               // unsigned integer type of the same width
bool holds_integer(DType t, int64_t v);    // v is a value of integer type t (i64: any)

// Calls f.template operator()<T>() with T the runtime dtype t: one template instantiated per
// dtype, chosen at run time.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
    switch (t) {
        case DType::f32:
            return f.template operator()<DType::f32>();
        case DType::f16:
            return f.template operator()<DType::f16>();
        case DType::bf16:
            return f.template operator()<DType::bf16>();
        case DType::i8:
            return f.template operator()<DType::i8>();
        case DType::u8:
            return f.template operator()<DType::u8>();
        case DType::i32:
            return f.template operator()<DType::i32>();
        case DType::u32:
            return f.template operator()<DType::u32>();
        case DType::i64:
            return f.template operator()<DType::i64>();
        case DType::boolean:
            break;
    }
    return f.template operator()<DType::boolean>();
}

// Host C++ type for each dtype, for typed host buffers.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
    static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<int8_t> {
    static constexpr DType value = DType::i8;
};
template <>
struct dtype_of<uint8_t> {
    static constexpr DType value = DType::u8;
};
template <>
struct dtype_of<int32_t> {
    static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<uint32_t> {
    static constexpr DType value = DType::u32;
};
template <>
struct dtype_of<int64_t> {
    static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<bool> {
    static constexpr DType value = DType::boolean;
};

}  // namespace kiln
