// kiln dtypes as DLPack element types and back.
#include "dlpack_dtype.hpp"

#include <fmt/format.h>

namespace kiln::python {

namespace dl = nanobind::dlpack;

dl::dtype dlpack_dtype(DType t) {
    const auto bits = static_cast<uint8_t>(bits_of(t));
    switch (t) {
        case DType::f32:
        case DType::f16:
            return {static_cast<uint8_t>(dl::dtype_code::Float), bits, 1};
        case DType::bf16:
            return {static_cast<uint8_t>(dl::dtype_code::Bfloat), bits, 1};
        case DType::i8:
        case DType::i32:
        case DType::i64:
            return {static_cast<uint8_t>(dl::dtype_code::Int), bits, 1};
        case DType::u8:
        case DType::u32:
            return {static_cast<uint8_t>(dl::dtype_code::UInt), bits, 1};
        case DType::boolean:
            break;
    }
    return {static_cast<uint8_t>(dl::dtype_code::Bool), 8, 1};
}

std::optional<DType> kiln_dtype(dl::dtype t) {
    if (t.lanes != 1) return std::nullopt;
    for (DType k : all_dtypes)
        if (dlpack_dtype(k) == t) return k;
    return std::nullopt;
}

std::string dlpack_dtype_name(dl::dtype t) {
    const char* kind = "";
    switch (static_cast<dl::dtype_code>(t.code)) {
        case dl::dtype_code::Int:
            kind = "int";
            break;
        case dl::dtype_code::UInt:
            kind = "uint";
            break;
        case dl::dtype_code::Float:
            kind = "float";
            break;
        case dl::dtype_code::Bfloat:
            kind = "bfloat";
            break;
        case dl::dtype_code::Complex:
            kind = "complex";
            break;
        case dl::dtype_code::Bool:
            kind = "bool";
            break;
        default:
            return fmt::format("DLPack type code {} of {} bits", t.code, t.bits);
    }
    if (t.lanes != 1) return fmt::format("{}{}x{}", kind, t.bits, t.lanes);
    return fmt::format("{}{}", kind, t.bits);
}

}  // namespace kiln::python
