// slot_ops: kiln's scalar semantics on the host for values held as 64-bit slots, for the tape
// evaluator and the IR interpreter. A slot holds a value's bits as they lie in memory,
// zero-extended: an f32's 32 bits, an f16's or bf16's 16, an integer's two's-complement bits, a
// bool as 0 or 1. Every operation is the one the emitter writes (emit_c.cpp) with the functions
// of scalar_semantics.h: f16/bf16 computed in f32 and rounded back, integers wrapping, division,
// shifts, min/max and float->integer casts as that header says.
#pragma once

#include <bit>
#include <cstdint>

#include "kiln/ir.hpp"

namespace kiln::ir {

using Slot = uint64_t;
// A pure operation on up to three operand slots (unused operands are ignored).
using SlotFn = Slot (*)(Slot a, Slot b, Slot c);

// The operation for operands of type `operand`, or nullptr where kiln defines none (the DSL and
// verify() reject those).
SlotFn binary_fn(BinOp op, DType operand);
SlotFn unary_fn(UnOp op, DType type);
SlotFn cast_fn(DType from, DType to);
SlotFn bitcast_fn(DType from, DType to);
SlotFn fma_fn(DType type);
SlotFn dp4a_fn();

// A constant's slot.
Slot const_slot(DType type, const expr::Const& c);
// A slot from an element's bytes in memory (bool: any non-zero byte is true), and back.
Slot load_slot(DType type, const uint8_t* element);
void store_slot(DType type, Slot value, uint8_t* element);
// An integer slot as a signed 64-bit value (signed types sign-extended).
int64_t slot_as_int(DType type, Slot value);
// A float slot as f32 (f16/bf16 widened), for messages and tests.
float slot_as_f32(DType type, Slot value);
inline Slot f32_slot(float v) {
    return std::bit_cast<uint32_t>(v);
}

}  // namespace kiln::ir
