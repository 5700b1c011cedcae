// The plain C++ reference of conv1d (kiln/ops/conv1d.hpp states the definition): for each output,
// acc = std::fma(x, w, acc) over the taps inside x, channels then taps ascending, from +0, then
// one rounding to y's dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/dtype.hpp"
#include "ops/conv1d/conv1d.hpp"

namespace kiln::oracle {

// y (dense: batch x out_channels x l_out elements of `out`, raw bytes) from x, raw element bytes
// of `input` (f32, f16 or bf16) read through its view (as in ops::Conv1dView), and w (dense:
// out_channels x in_channels/groups x kernel).
std::vector<uint8_t> conv1d(DType input, DType out, const std::vector<uint8_t>& x,
                            const ops::Conv1dView& xv, const std::vector<uint8_t>& w,
                            const ops::Conv1dShape& shape);

// The tensor-core class's bound for each output of conv1d() (kiln/ops/conv1d.hpp):
// kTensorCoreBound * (in_channels/groups * kernel) * sum |x w| over the output's taps inside x.
std::vector<double> conv1d_tensor_core_bound(DType input, const std::vector<uint8_t>& x,
                                             const ops::Conv1dView& xv,
                                             const std::vector<uint8_t>& w,
                                             const ops::Conv1dShape& shape);

}  // namespace kiln::oracle
