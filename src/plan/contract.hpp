// The planner's view of a contraction node (graph Matmul): its sizes, and each operand as the
// kernel reads it: a materialized node's buffer, seen through the views between that node and
// the operand that cost nothing to read in place (a transpose of the last two axes, a broadcast
// batch, leading unit axes). Whatever is not such a view is the buffer read: the planner
// materializes it.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/graph_view.hpp"

namespace kiln::plan {

struct ContractShape {
    int64_t batch = 1, m = 0, n = 0, k = 0;
};
ContractShape contract_shape(const GraphView& g, int matmul);

struct ContractOperand {
    int source = -1;          // the node whose buffer (dense, row-major) the kernel reads
    bool transposed = false;  // the operand is the transpose of source's last two axes
    bool shared = false;      // one matrix for every batch (batch stride 0)
};
// Operand `which` (0: a, 1: b) of Matmul node `matmul`, peeling views down to the first node that
// is materialized or is not a view the kernel can read through.
ContractOperand contract_operand(const GraphView& g, const std::vector<char>& materialized,
                                 int matmul, int which);

}  // namespace kiln::plan
