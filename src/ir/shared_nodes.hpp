// shared_nodes: the expression nodes that occur more than once among some roots (expressions
// are DAGs: the DSL reuses values freely). Printers and emitters name each such node once
// instead of repeating its text, which would grow exponentially with nesting.
#pragma once

#include <functional>
#include <vector>

#include "kiln/ir.hpp"

namespace kiln::ir {

// Non-trivial nodes reached more than once from `roots`, children before parents. Trivial nodes
// (constants, locals, parameters, builtins) are never listed; nodes for which `eligible` is
// false are neither listed nor looked inside.
std::vector<const ExprNode*> shared_nodes(const std::vector<ExprRef>& roots,
                                          const std::function<bool(const ExprNode&)>& eligible);

bool is_trivial(const ExprNode& e);

}  // namespace kiln::ir
