// emit_c: the one C-family code generator. Lowers kernels for a dialect (codegen/lower.hpp)
// and prints them, with the dialect's prelude and kiln's scalar semantics, as one compile unit.
#pragma once

#include <string>
#include <vector>

#include "codegen/dialect.hpp"
#include "codegen/lower.hpp"
#include "kiln/ir.hpp"

namespace kiln::codegen {

// The name a kernel's entry point has in generated code: its name and structural hash, so
// kernels of one name built from different comptime values can share a compile unit.
std::string entry_name(const ir::Kernel& kernel);

// One compile unit holding every kernel given, each under entry_name(kernel).
std::string emit_source(const std::vector<const ir::Kernel*>& kernels, const Dialect& dialect,
                        const EmitOptions& options = {});

}  // namespace kiln::codegen
