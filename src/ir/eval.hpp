// eval: evaluates host-side expressions (kernel requirements) over buffer lengths, scalar
// arguments and constants, with kiln's integer semantics.
#pragma once

#include <cstdint>
#include <functional>

#include "kiln/ir.hpp"

namespace kiln::ir {

struct HostValue {
    int64_t i = 0;  // integers and bool
    double f = 0;   // floats
};

// `param_value(i)` gives scalar parameter i's value; `buffer_len(i)` buffer parameter i's length.
HostValue eval_host(const ExprRef& e, const std::function<HostValue(int)>& param_value,
                    const std::function<int64_t(int)>& buffer_len);

}  // namespace kiln::ir
