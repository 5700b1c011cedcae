// Structural hash of a kernel: equal for the same IR built twice, different when any comptime
// value changes what was built.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/ir.hpp"

namespace kiln::ir {

uint64_t structural_hash(const Kernel& kernel);
std::string hex(uint64_t value);  // 16 lowercase hex digits

}  // namespace kiln::ir
