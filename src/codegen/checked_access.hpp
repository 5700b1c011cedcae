// checked_access: the C of checked mode (ir/check_bounds.hpp). A checked compile unit defines
// kiln_in_bounds, which tests an access and, where it is out of range, claims the kernel's fault
// record for it; each ir::expr::InBounds becomes a call of it.
#pragma once

#include <string>

#include "codegen/dialect.hpp"
#include "kiln/ir.hpp"

namespace kiln::codegen {

// The functions a compile unit of checked kernels defines, after the scalar semantics.
std::string checked_prelude(const Dialect& dialect);

// The call an InBounds node becomes, from the text of its parts: the fault record's pointer,
// the index, the length, the condition (`when`; "true" where it has none), and this thread's
// block and thread index.
std::string in_bounds_call(const ir::expr::InBounds& node, const std::string& record,
                           const std::string& index, const std::string& length,
                           const std::string& when, const std::string& block,
                           const std::string& thread);

}  // namespace kiln::codegen
