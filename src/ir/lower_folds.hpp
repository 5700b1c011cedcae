// lower_folds: replaces every Fold with plain IR computing the canonical order: per-thread lane
// loops, the thread-local levels of the halving tree, then the cross-thread levels — through
// warp shuffles when the target has them (warp_size >= the fold's threads), else through a
// shared tile and barriers. Every form computes bitwise the same tree.
#pragma once

#include "kiln/ir.hpp"

namespace kiln::ir {

// uniform_rounds (the CPU, whose block runs its threads as loops): every thread of a fold steps
// through the same rounds of W*V elements, the loop over rounds uniform, so a block's threads
// (and a thread's lanes, when it has many) run a round side by side as SIMD lanes.
Kernel lower_folds(const Kernel& kernel, int warp_size, bool uniform_rounds = false);

// The identity of a fold op for a type: 0 for sum, 1 for prod, -inf / the type's minimum for
// max, +inf / the type's maximum for min.
ExprRef fold_identity(FoldOp op, DType type);
// The binary operation that combines two values of a fold: + for sum, * for prod, min, max.
BinOp fold_binop(FoldOp op);
// op(a, b) as an expression.
ExprRef fold_combine(FoldOp op, const ExprRef& a, const ExprRef& b);

}  // namespace kiln::ir
