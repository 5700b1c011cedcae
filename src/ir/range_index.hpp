// range_index: index arithmetic rewritten with the values its operands can take (ir/ranges.hpp),
// each rewrite the same value. An index computed as a flattened position and cut apart again,
// x = a + k*8192 with 0 <= a < 8192, read as x / 262144 and x % 8192, becomes k / 32 and a (each
// rule holds for non-negative terms whose sum never wraps, which the ranges prove); a load's i64
// index narrowed to i32 by a cast it does not need is read as it is. A backend's compiler then sees
// affine indices (no division, no truncation) it can vectorize.
#pragma once

#include "kiln/ir.hpp"

namespace kiln::ir {

// x / c and x % c (c > 0 a constant) with x a sum of non-negative terms (through adds, products
// and left shifts by constants, and casts that keep the value) in every launch:
//   x % c   drops the terms that are multiples of c, and the % itself where the rest is below c;
//   x / c   drops the terms below c1 (a divisor of c) when they sum to less than c1 and the others
//           are multiples of c1, dividing those by c1 and c by c1; then takes out the terms that
//           are multiples of what is left of c.
// A load whose index is cast<i32>(x) with x an i64 in i32's range reads at x.
// The kernel's requirements are the only facts used, so a rewritten node is right wherever it is
// evaluated.
Kernel simplify_indices(const Kernel& kernel);

}  // namespace kiln::ir
