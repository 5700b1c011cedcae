// verify: checks a whole kernel and throws kiln::Error naming the kernel and the first problem:
// operand types, declared-before-use locals, memory references and access modes, barriers only
// at block-uniform points, fold schedules that fit the block, host-checkable requirements.
#pragma once

#include "kiln/ir.hpp"

namespace kiln::ir {

void verify(const Kernel& kernel);

}  // namespace kiln::ir
