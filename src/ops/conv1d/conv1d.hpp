// conv1d's kernel body for callers that declare their own parameters (the graph planner's launches
// with fused prologues and epilogues); the op itself is declared in kiln/ops/conv1d.hpp.
#pragma once

#include <functional>

#include "kiln/dsl.hpp"
#include "kiln/ops/conv1d.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops {

// The kernel's work for a caller that writes y itself (a graph planner's epilogue): x, w and the
// sizes as expressions (parameters or constants), x read through its view; each output's f32
// value goes to store(n, oc, t, acc), once per output, never for a channel or position past the
// end. The caller checks the sizes (conv1d_kernel's contract). x and w as ElementReads
// (ops/kernel_parts.hpp).
struct Conv1dViews {
    ElementRead x, w;
    Expr batch, c_in, length, c_out, kernel, stride, padding, dilation, groups;
    Expr x_offset, x_batch, x_channel;
};
// Stores output (n, oc, t): n and oc i32, the position t i32 or i64.
using Conv1dStore =
    std::function<void(const Expr& n, const Expr& oc, const Expr& t, const Expr& acc)>;
void conv1d_body(KernelBuilder& k, const Conv1dViews& views, const Conv1dTypes& types,
                 const Conv1dSchedule& schedule, const Conv1dStore& store);

}  // namespace kiln::ops
