// kiln's shipped tuned ops, each written once in the DSL with its oracle and its schedule domain:
// rms_norm, matvec_q8 (and the host Q8_0 quantizer), the Q4_K / Q6_K matvec_kquant, matmul,
// conv1d and attention, on buffers.
// The lazy tensor API (kiln/tensor.hpp) reaches the same kernels through the graph planner.
#pragma once

#include "kiln/ops/attention.hpp"
#include "kiln/ops/conv1d.hpp"
#include "kiln/ops/matmul.hpp"
#include "kiln/ops/matvec_kquant.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
