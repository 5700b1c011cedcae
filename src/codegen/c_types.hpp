// c_types: how kiln's dtypes and constants are spelled in C-family source, the same in every
// dialect (f16/bf16 travel as their 16 bits; bool is stored as one byte).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/dtype.hpp"

namespace kiln::codegen {

// The C type a value of `t` has in generated code.
const char* c_type(DType t);
// The C type of an element in memory (bool is stored as one byte).
const char* c_mem_type(DType t);
// The unsigned type wrapping arithmetic of `t` goes through.
const char* c_unsigned(DType t);
// An f32 constant that reads back as exactly `v` rounded to f32 (NaN and inf through bits).
std::string f32_literal(double v);
// An integer or bool constant of type `t`.
std::string int_literal(DType t, int64_t v);

}  // namespace kiln::codegen
