// simplify: constant folding that keeps every result bit-exact. Integer arithmetic folds with
// kiln's wrapping and division rules; f32 + - * / fold in IEEE single precision (what every
// backend computes); identities are applied only where they are exact for every input
// (x * 1, x - 0; for integers also x + 0, x - x, x * 0, x / 1, x % 1, shifts by 0 and
// (x + c1) + c2 = x + (c1 + c2), all exact under wrapping; in a kernel, thread_index / c,
// % c, & m and >> s where the thread index, below the block size, passes or vanishes; and a
// local whose one Let gives it a constant, read as that constant).
// f16/bf16 expressions are left alone.
#pragma once

#include "kiln/ir.hpp"

namespace kiln::ir {

ExprRef simplify(const ExprRef& e);
Kernel simplify(const Kernel& kernel);

}  // namespace kiln::ir
