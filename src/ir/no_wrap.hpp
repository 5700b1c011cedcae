// no_wrap: the integer arithmetic of a kernel that never wraps. kiln's integers wrap
// (docs/numerics.md), so a backend writes + - * through unsigned types, which hides from its
// compiler that an index steps by one through memory. Where the range analysis (ir/ranges.hpp)
// proves that an operation's exact result fits its type, wrapping and plain signed arithmetic
// agree, and a backend may write the plain form: the same value, and affine indices the compiler
// vectorizes as contiguous accesses.
#pragma once

#include <cstdint>
#include <unordered_set>

#include "kiln/ir.hpp"

namespace kiln::ir {

struct NoWrap {
    // Binary add, sub and mul nodes on integers whose result never leaves their type.
    std::unordered_set<const ExprNode*> ops;
    // Loop variables (local ids) whose `+= step` never leaves their type.
    std::unordered_set<int> steps;
    bool operator==(const NoWrap&) const = default;
};

// What never wraps in launches of at most `max_grid` blocks.
NoWrap find_no_wrap(const Kernel& kernel, int64_t max_grid);

// The most blocks of `block_size` threads whose absolute positions fit in i32.
int64_t i32_position_grid(int block_size);

}  // namespace kiln::ir
