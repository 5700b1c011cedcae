// The arithmetic of every elementwise graph op and generator, written once in the DSL. These
// formulas are the ops' definitions (docs/graph.md); graph/oracle.cpp evaluates the same
// formulas in plain C++ with kiln::host's twins of the transcendentals.
#pragma once

#include <vector>

#include "graph/node.hpp"
#include "kiln/dsl.hpp"

namespace kiln::plan {

// op applied to `args` (of the input nodes' dtypes), giving a value of dtype `out`. Float ops
// compute in f32 and round to `out` once.
Expr apply_map(graph::MapOp op, const std::vector<Expr>& args, DType out);

// The generator's element at `linear` (an i32 or i64 index).
Expr generate(const graph::op::Generate& g, DType out, const Expr& linear);

// The 32-bit hash rand/randn draw from: element `index` of the stream of `seed`.
uint32_t random_key(uint64_t seed);

}  // namespace kiln::plan
