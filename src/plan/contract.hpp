// The planner's view of a contraction node (graph Matmul, Conv1d, Attention): its launch kind,
// its sizes, and each operand as the kernel reads it: a materialized node's buffer, for a Matmul
// seen through the views between that node and the operand that cost nothing to read in place (a
// transpose of the last two axes, a broadcast batch, leading unit axes, on the CPU the leading
// columns of a wider matrix). Whatever is not such a
// view is the array read: the planner materializes it, or computes it where it is read (a
// prologue: prologue_fusible). Conv1d and Attention read their operands as dense arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// Whether node n is a contraction (computed by its own contract, conv1d or attention launch),
// and which launch kind computes it.
bool is_contraction(const graph::Node& n);
LaunchKind contraction_kind(const graph::Node& n);

struct ContractShape {
    int64_t batch = 1, m = 0, n = 0, k = 0;
};
ContractShape contract_shape(const GraphView& g, int matmul);
// A Conv1d node's problem, and an Attention node's (its options with the node's dtype as O's).
ops::Conv1dShape conv1d_shape(const GraphView& g, int conv);
ops::AttentionShape attention_shape(const GraphView& g, int attention);
ops::AttentionOptions attention_options(const GraphView& g, int attention);

// The split points (ops::MatmulSchedule::split_k) of Matmul node `matmul`'s class on its device
// that apply to its shape, as indices into ops::matmul_all_variants(): none where k has one chunk
// (kiln/ops/contraction_order.hpp) or the chunk sums would pass the op's scratch limit.
std::vector<int> split_variants(const GraphView& g, int matmul);

struct ContractOperand {
    int source = -1;          // the node whose buffer (dense, row-major) the kernel reads
    bool transposed = false;  // the operand is the transpose of source's last two axes
    bool shared = false;      // one matrix for every batch (batch stride 0)
    // Where the operand is the leading columns of source's matrices (a column slice read in
    // place): source's row length, the kernel's leading dimension. 0: the operand is source's
    // whole matrices.
    int64_t row_length = 0;
};
// Operand `which` of contraction node `node` (Matmul: 0 is a, 1 is b, peeling views down to the
// first node that is materialized or is not a view the kernel can read through; Conv1d and
// Attention: the input itself).
ContractOperand contract_operand(const GraphView& g, const std::vector<char>& materialized,
                                 int node, int which);

// Whether a contraction's operand source (contract_operand's) may stay unmaterialized, computed
// where the kernel reads each element (a prologue): maps and views (at least one map) that need
// only materialized nodes and constants, each map one the map-op table marks for the prologue
// (graph/map_op_table.cpp: a cast, add, sub, mul, min, max, a comparison, a select, neg, abs,
// relu, square, rounding; no division or function a math library computes), at most
// kMaxPrologueNodes nodes. A kernel reads an operand element once per tile of
// the other side, so the prologue runs that many times: only cheap ones are worth it. Casts and
// dequantizations (an int8 tensor cast and scaled by its blocks' scales) qualify. On the CPU an
// attention's prologue holds no view: its points read each K and V element once per block of
// query rows as one scalar for every row, so a view's index arithmetic (a head view's divisions,
// a broadcast bias's remainder) is not spread over a vector's lanes
// (notes/cpu-attention-operands-2026-12-05.md).
inline constexpr int kMaxPrologueNodes = 16;
bool prologue_fusible(const GraphView& g, const std::vector<char>& materialized, int contraction,
                      int source);

}  // namespace kiln::plan
