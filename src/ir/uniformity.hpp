// uniformity: which values are the same in every thread of a block. Barriers may only sit where
// every thread of the block arrives, so their enclosing conditions and loop bounds must be
// uniform; the CPU backend also evaluates such conditions once per block.
#pragma once

#include <vector>

#include "kiln/ir.hpp"

namespace kiln::ir {

struct Uniformity {
    std::vector<bool> varying_local;  // by local id: may differ between threads of a block
    const Kernel* kernel = nullptr;
    bool varying(const ExprRef& e) const;
};

Uniformity analyze_uniformity(const Kernel& kernel);

}  // namespace kiln::ir
