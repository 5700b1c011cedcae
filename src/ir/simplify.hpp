// simplify: constant folding that keeps every result bit-exact. Integer arithmetic folds with
// kiln's wrapping and division rules; f32 + - * / fold in IEEE single precision (what every
// backend computes); identities are applied only where they are exact for every input
// (x * 1, x - 0, integer x + 0). f16/bf16 expressions are left alone.
#pragma once

#include "kiln/ir.hpp"

namespace kiln::ir {

ExprRef simplify(const ExprRef& e);
Kernel simplify(const Kernel& kernel);

}  // namespace kiln::ir
