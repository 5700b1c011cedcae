// DType names, sizes and classes.
#include "kiln/dtype.hpp"

#include "kiln/error.hpp"

namespace kiln {

std::string_view name(DType t) {
    switch (t) {
        case DType::f32:
            return "f32";
        case DType::f16:
            return "f16";
        case DType::bf16:
            return "bf16";
        case DType::i8:
            return "i8";
        case DType::u8:
            return "u8";
        case DType::i32:
            return "i32";
        case DType::u32:
            return "u32";
        case DType::i64:
            return "i64";
        case DType::boolean:
            return "bool";
    }
    return "?";
}

DType parse_dtype(std::string_view text) {
    for (DType t : all_dtypes)
        if (name(t) == text) return t;
    fail("unknown dtype '{}'; expected one of f32 f16 bf16 i8 u8 i32 u32 i64 bool", text);
}

size_t size_of(DType t) {
    return static_cast<size_t>(bits_of(t) / 8);
}

int bits_of(DType t) {
    switch (t) {
        case DType::f32:
        case DType::i32:
        case DType::u32:
            return 32;
        case DType::f16:
        case DType::bf16:
            return 16;
        case DType::i8:
        case DType::u8:
        case DType::boolean:
            return 8;
        case DType::i64:
            return 64;
    }
    return 0;
}

bool is_float(DType t) {
    return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}
bool is_half(DType t) {
    return t == DType::f16 || t == DType::bf16;
}
bool is_integer(DType t) {
    return t == DType::i8 || t == DType::u8 || t == DType::i32 || t == DType::u32 ||
           t == DType::i64;
}
bool is_signed(DType t) {
    return is_float(t) || t == DType::i8 || t == DType::i32 || t == DType::i64;
}

bool holds_integer(DType t, int64_t v) {
    switch (t) {
        case DType::i8:
            return v >= -128 && v <= 127;
        case DType::u8:
            return v >= 0 && v <= 255;
        case DType::i32:
            return v >= INT32_MIN && v <= INT32_MAX;
        case DType::u32:
            return v >= 0 && v <= static_cast<int64_t>(UINT32_MAX);
        default:
            return true;
    }
}

DType storage_uint(DType t) {
    switch (bits_of(t)) {
        case 8:
            return DType::u8;
        case 16:
            return DType::f16;  // no u16 dtype: 16-bit values are the half types
        case 32:
            return DType::u32;
        default:
            return DType::i64;
    }
}

}  // namespace kiln
