// lower: the passes between a kernel as the DSL built it and the kernel the emitter prints, in
// order: lower_folds (for the dialect's warp), simplify, then, in checked mode, check_bounds.
#pragma once

#include "codegen/dialect.hpp"
#include "ir/check_bounds.hpp"
#include "kiln/ir.hpp"

namespace kiln::codegen {

// Which grids the CPU's code for a kernel serves. Its integer arithmetic is plain where it never
// wraps in the launch's grid, so where larger grids wrap more, they need copies of the kernel
// written for them (emit_c.cpp): `entry` writes the entry alone, for the grids it serves
// (SourceParts::max_grids), and `every` adds the copies, to which the entry hands larger grids.
// GPU code serves every grid either way.
enum class Grids { entry, every };

struct EmitOptions {
    bool check_bounds = false;  // checked mode (ir/check_bounds.hpp)
    Grids grids = Grids::entry;
};

struct Lowered {
    ir::Kernel kernel;
    ir::BoundsCheckCounts checks;  // all zero unless checked
};

Lowered lower(const ir::Kernel& kernel, const Dialect& dialect, const EmitOptions& options);

}  // namespace kiln::codegen
