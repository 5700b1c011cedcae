// The rows of the map-op table (map_op_table.hpp), one per op in enum order.
#include "graph/map_op_table.hpp"

#include <array>

namespace kiln::graph {
namespace {

using enum MapOp;
constexpr MapInputs any = MapInputs::any, numeric = MapInputs::numeric, floats = MapInputs::floats,
                    boolean = MapInputs::boolean;
constexpr MapResult operand = MapResult::operand, to_bool = MapResult::boolean,
                    named = MapResult::named;
// Weights: a transcendental costs about twenty simple operations.
constexpr double simple = 1, transcendental = 20;
constexpr bool cheap = true, costly = false;

// clang-format off
constexpr std::array kTable{
    //        op           name           arity inputs   result    weight          prologue
    MapOpInfo{neg,         "neg",         1,    numeric, operand,  simple,         cheap},
    MapOpInfo{abs,         "abs",         1,    numeric, operand,  simple,         cheap},
    MapOpInfo{exp,         "exp",         1,    floats,  operand,  transcendental, costly},
    MapOpInfo{log,         "log",         1,    floats,  operand,  transcendental, costly},
    MapOpInfo{sqrt,        "sqrt",        1,    floats,  operand,  simple,         costly},
    MapOpInfo{rsqrt,       "rsqrt",       1,    floats,  operand,  simple,         costly},
    MapOpInfo{sin,         "sin",         1,    floats,  operand,  transcendental, costly},
    MapOpInfo{cos,         "cos",         1,    floats,  operand,  transcendental, costly},
    MapOpInfo{tanh,        "tanh",        1,    floats,  operand,  transcendental, costly},
    MapOpInfo{erf,         "erf",         1,    floats,  operand,  transcendental, costly},
    MapOpInfo{sigmoid,     "sigmoid",     1,    floats,  operand,  transcendental, costly},
    MapOpInfo{relu,        "relu",        1,    numeric, operand,  simple,         cheap},
    MapOpInfo{gelu_erf,    "gelu",        1,    floats,  operand,  transcendental, costly},
    MapOpInfo{gelu_tanh,   "gelu_tanh",   1,    floats,  operand,  transcendental, costly},
    MapOpInfo{silu,        "silu",        1,    floats,  operand,  transcendental, costly},
    MapOpInfo{square,      "square",      1,    numeric, operand,  simple,         cheap},
    MapOpInfo{recip,       "recip",       1,    floats,  operand,  simple,         costly},
    MapOpInfo{floor,       "floor",       1,    floats,  operand,  simple,         cheap},
    MapOpInfo{ceil,        "ceil",        1,    floats,  operand,  simple,         cheap},
    MapOpInfo{round,       "round",       1,    floats,  operand,  simple,         cheap},
    MapOpInfo{logical_not, "logical_not", 1,    boolean, operand,  simple,         cheap},
    MapOpInfo{isnan,       "isnan",       1,    floats,  to_bool,  simple,         cheap},
    MapOpInfo{cast,        "cast",        1,    any,     named,    simple,         cheap},
    MapOpInfo{add,         "add",         2,    numeric, operand,  simple,         cheap},
    MapOpInfo{sub,         "sub",         2,    numeric, operand,  simple,         cheap},
    MapOpInfo{mul,         "mul",         2,    numeric, operand,  simple,         cheap},
    MapOpInfo{div,         "div",         2,    numeric, operand,  simple,         costly},
    MapOpInfo{pow,         "pow",         2,    floats,  operand,  transcendental, costly},
    MapOpInfo{minimum,     "minimum",     2,    numeric, operand,  simple,         cheap},
    MapOpInfo{maximum,     "maximum",     2,    numeric, operand,  simple,         cheap},
    MapOpInfo{eq,          "eq",          2,    any,     to_bool,  simple,         cheap},
    MapOpInfo{ne,          "ne",          2,    any,     to_bool,  simple,         cheap},
    MapOpInfo{lt,          "lt",          2,    numeric, to_bool,  simple,         cheap},
    MapOpInfo{le,          "le",          2,    numeric, to_bool,  simple,         cheap},
    MapOpInfo{gt,          "gt",          2,    numeric, to_bool,  simple,         cheap},
    MapOpInfo{ge,          "ge",          2,    numeric, to_bool,  simple,         cheap},
    MapOpInfo{logical_and, "logical_and", 2,    boolean, operand,  simple,         cheap},
    MapOpInfo{logical_or,  "logical_or",  2,    boolean, operand,  simple,         cheap},
    MapOpInfo{where,       "where",       3,    any,     operand,  simple,         cheap},
};
// clang-format on

constexpr bool rows_in_enum_order() {
    for (size_t i = 0; i < kTable.size(); ++i)
        if (static_cast<size_t>(kTable[i].op) != i) return false;
    return kTable.size() == static_cast<size_t>(where) + 1;
}
static_assert(rows_in_enum_order(), "map_op_table: one row per MapOp, in enum order");

}  // namespace

const MapOpInfo& info(MapOp op) {
    return kTable[static_cast<size_t>(op)];
}

std::span<const MapOpInfo> map_ops() {
    return kTable;
}

}  // namespace kiln::graph
