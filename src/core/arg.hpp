// Scalar launch arguments converted to their parameters' dtypes (Arg::to_parameter), for
// CompiledKernel::launch and kiln::interpret.
#pragma once

#include <span>
#include <vector>

#include "kiln/compile.hpp"

namespace kiln {

// `args` (in parameter order) with every scalar converted to its parameter's dtype. Returns
// `args` itself when nothing needs converting, else a view of `storage`. Arguments that do not
// match the parameters' count or kinds are left for the caller to report.
std::span<const Arg> converted_scalars(const ir::Kernel& kernel, std::span<const Arg> args,
                                       std::vector<Arg>& storage);

}  // namespace kiln
