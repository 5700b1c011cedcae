// lower_folds: replaces every Fold with plain IR computing the canonical order: per-thread lane
// loops, the thread-local levels of the halving tree, then the cross-thread levels — through
// warp shuffles when the target has them (warp_size >= the fold's threads), else through a
// shared tile and barriers. Every form computes bitwise the same tree.
#pragma once

#include "kiln/ir.hpp"

namespace kiln::ir {

Kernel lower_folds(const Kernel& kernel, int warp_size);

// The identity of a fold op for a type: 0 for sum, 1 for prod, -inf / the type's minimum for
// max, +inf / the type's maximum for min.
ExprRef fold_identity(FoldOp op, DType type);
// op(a, b) as an expression.
ExprRef fold_combine(FoldOp op, const ExprRef& a, const ExprRef& b);

}  // namespace kiln::ir
