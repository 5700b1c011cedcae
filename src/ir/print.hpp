// print: a readable, complete dump of a kernel's IR. Complete means two kernels print the same
// text exactly when they are the same IR, so the structural hash is a hash of this text.
#pragma once

#include <string>

#include "kiln/ir.hpp"

namespace kiln::ir {

std::string print(const Kernel& kernel);
std::string print(const ExprRef& e, const Kernel& kernel);

}  // namespace kiln::ir
