// The map ops and their one table: each op's name, arity, the dtypes it accepts, its result
// dtype, its cost weight in the roofline and whether a contraction's operand prologue may
// recompute it. Everything about a map op other than its formula is read from here; the two
// formulas stay apart (plan/map_ops.cpp emits an op's code, graph/oracle.cpp computes it on the
// host), so the oracle stays independent of the code it checks. Adding a map op: an enum value,
// its row in map_op_table.cpp, and its two formulas (docs/writing-an-op.md).
#pragma once

#include <cstdint>
#include <span>

namespace kiln::graph {

enum class MapOp : uint8_t {
    // unary
    neg,
    abs,
    exp,
    log,
    sqrt,
    rsqrt,
    sin,
    cos,
    tanh,
    erf,
    sigmoid,
    relu,
    gelu_erf,
    gelu_tanh,
    silu,
    square,
    recip,
    floor,
    ceil,
    round,
    logical_not,
    isnan,
    cast,  // to the node's dtype, by kiln's cast rules
    // binary
    add,
    sub,
    mul,
    div,
    pow,
    minimum,
    maximum,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    logical_and,
    logical_or,
    // ternary
    where,  // where(cond, a, b)
};

// The dtypes an op's operands may have (where's condition is bool, its branches any).
enum class MapInputs : uint8_t { any, numeric, floats, boolean };
// The dtype of an op's result: its operands' (where's branches'), bool, or the one the caller
// names (cast).
enum class MapResult : uint8_t { operand, boolean, named };

struct MapOpInfo {
    MapOp op;
    const char* name;
    int arity;
    MapInputs inputs;
    MapResult result;
    // The roofline's arithmetic per element, in simple operations (plan/roofline.cpp).
    double weight;
    // Whether a contraction's operand prologue may recompute it for every use of an operand
    // element (plan/contract.hpp's prologue_fusible): only cheap ones are worth it.
    bool prologue;
};

const MapOpInfo& info(MapOp op);
std::span<const MapOpInfo> map_ops();  // every op, in enum order

inline const char* name(MapOp op) {
    return info(op).name;
}
inline int arity(MapOp op) {
    return info(op).arity;
}
// eq ne lt le gt ge: two operands, a bool result.
inline bool is_comparison(MapOp op) {
    return info(op).arity == 2 && info(op).result == MapResult::boolean;
}

}  // namespace kiln::graph
