// c_types: dtype and constant spellings shared by every dialect.
#include "codegen/c_types.hpp"

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kiln::codegen {

const char* c_type(DType t) {
    switch (t) {
        case DType::f32:
            return "float";
        case DType::f16:
        case DType::bf16:
            return "uint16_t";
        case DType::i8:
            return "int8_t";
        case DType::u8:
            return "uint8_t";
        case DType::i32:
            return "int32_t";
        case DType::u32:
            return "uint32_t";
        case DType::i64:
            return "int64_t";
        case DType::boolean:
            return "bool";
    }
    return "?";
}

const char* c_mem_type(DType t) {
    return t == DType::boolean ? "uint8_t" : c_type(t);
}

const char* c_unsigned(DType t) {
    switch (t) {
        case DType::i8:
        case DType::u8:
            return "uint8_t";
        case DType::i32:
        case DType::u32:
            return "uint32_t";
        default:
            return "uint64_t";
    }
}

std::string f32_literal(double v) {
    const float f = static_cast<float>(v);
    if (std::isnan(f) || std::isinf(f))
        return fmt::format("kiln_bits_f32(0x{:08x}u)", std::bit_cast<uint32_t>(f));
    return fmt::format("{:a}f", static_cast<double>(f));
}

std::string int_literal(DType t, int64_t v) {
    switch (t) {
        case DType::boolean:
            return v ? "true" : "false";
        case DType::u32:
            return fmt::format("{}u", static_cast<uint32_t>(v));
        case DType::i64:
            if (v == std::numeric_limits<int64_t>::min())
                return "((int64_t)(-9223372036854775807 - 1))";
            return fmt::format("((int64_t){})", v);
        default:
            return fmt::format("(({}){})", c_type(t), v);
    }
}

}  // namespace kiln::codegen
