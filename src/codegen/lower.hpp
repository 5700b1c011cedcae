// lower: the passes between a kernel as the DSL built it and the kernel the emitter prints, in
// order: lower_folds (for the dialect's warp), simplify, then, in checked mode, check_bounds.
#pragma once

#include "codegen/dialect.hpp"
#include "ir/check_bounds.hpp"
#include "kiln/ir.hpp"

namespace kiln::codegen {

struct EmitOptions {
    bool check_bounds = false;  // checked mode (ir/check_bounds.hpp)
};

struct Lowered {
    ir::Kernel kernel;
    ir::BoundsCheckCounts checks;  // all zero unless checked
};

Lowered lower(const ir::Kernel& kernel, const Dialect& dialect, const EmitOptions& options);

}  // namespace kiln::codegen
