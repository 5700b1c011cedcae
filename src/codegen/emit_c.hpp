// emit_c: the one C-family code generator. Lowers kernels for a dialect (codegen/lower.hpp)
// and prints them, with the dialect's prelude and kiln's scalar semantics, as one compile unit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/dialect.hpp"
#include "codegen/lower.hpp"
#include "kiln/ir.hpp"

namespace kiln::codegen {

// The name a kernel's entry point has in generated code: its name and structural hash, so
// kernels of one name built from different comptime values can share a compile unit.
std::string entry_name(const ir::Kernel& kernel);
// The same from the kernel's structural hash (ir::structural_hash), where it is known.
std::string entry_name(const ir::Kernel& kernel, uint64_t structural_hash);

// One compile unit holding every kernel given, each under entry_name(kernel).
std::string emit_source(const std::vector<const ir::Kernel*>& kernels, const Dialect& dialect,
                        const EmitOptions& options = {});

// A compile unit in its parts: the header every unit starts with (a comment naming the
// backend, the dialect's prelude, kiln's scalar semantics, the checked prelude, a blank line)
// and each distinct kernel's code under its entry; the unit is the header, then each kernel's
// code after a newline (joined(), what emit_source returns).
struct SourceParts {
    std::string header;
    std::vector<std::string> entries, kernels;
    // By entry: the largest grid (in blocks) its code serves, INT64_MAX for every grid (the
    // CPU's code for Grids::entry may serve fewer; EmitOptions).
    std::vector<int64_t> max_grids;
    std::string joined() const;
};
// emit_source's unit in parts, entries[i] being entry_name(*kernels[i]).
SourceParts emit_parts(const std::vector<const ir::Kernel*>& kernels,
                       const std::vector<std::string>& entries, const Dialect& dialect,
                       const EmitOptions& options = {});

}  // namespace kiln::codegen
