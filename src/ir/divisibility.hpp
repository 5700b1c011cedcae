// divisibility: powers of two that integer values are known to be multiples of, from the
// kernel's structure alone (constants, products, shifts, sums, loop strides). The CUDA emitter
// uses it to write a vector access whose index is a multiple of its width as one wide access,
// without the run-time alignment test.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir.hpp"

namespace kiln::ir {

// The largest divisor tracked: enough for the widest vector access.
inline constexpr int64_t kMaxKnownDivisor = 64;

class Divisibility {
  public:
    // Scans the kernel's statements: a local's divisor is the one every value given to it has
    // (its lets and assignments; a loop variable's begin and step), found as the greatest
    // fixpoint, so values assigned inside loops are covered by induction.
    explicit Divisibility(const Kernel& kernel);
    // A power of two in [1, kMaxKnownDivisor] dividing e's value in every thread and launch
    // (1 when nothing is known; non-integer values are 1).
    int64_t of(const ExprRef& e) const;

  private:
    std::vector<int64_t> local_;  // by local id
};

}  // namespace kiln::ir
