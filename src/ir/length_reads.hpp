// length_reads: which buffer parameters a kernel reads the i32 length of (Memory::len()), in its
// body or its requirements. The launch refuses a buffer past INT32_MAX elements to such a kernel,
// since its i32 length could not hold the count; kernels that read only len64() take any size.
#pragma once

#include <vector>

#include "kiln/ir.hpp"

namespace kiln::ir {

// Indexed by parameter: true where the kernel reads that buffer's length as i32.
std::vector<bool> reads_i32_length(const Kernel& kernel);

}  // namespace kiln::ir
