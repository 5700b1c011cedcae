// Contraction operands: peeling the views a matmul kernel reads through.
#include "plan/contract.hpp"

namespace kiln::plan {

namespace {

// The last two extents of a shape (1 for missing axes), and the product of the others.
struct Matrices {
    int64_t rows = 1, cols = 1, count = 1;
};
Matrices matrices(const graph::Shape& s) {
    Matrices m;
    const size_t r = s.size();
    if (r >= 1) m.cols = s[r - 1];
    if (r >= 2) m.rows = s[r - 2];
    for (size_t i = 0; i + 2 < r; ++i) m.count *= s[i];
    return m;
}

bool swaps_last_two(const std::vector<int64_t>& order) {
    const size_t r = order.size();
    if (r < 2) return false;
    for (size_t i = 0; i + 2 < r; ++i)
        if (order[i] != int64_t(i)) return false;
    return order[r - 2] == int64_t(r - 1) && order[r - 1] == int64_t(r - 2);
}

}  // namespace

ContractShape contract_shape(const GraphView& g, int matmul) {
    const graph::Node& c = g.node(matmul);
    const Matrices out = matrices(c.shape);
    const Matrices a = matrices(g.node(g.inputs[size_t(matmul)][0]).shape);
    return {out.count, out.rows, out.cols, a.cols};
}

ContractOperand contract_operand(const GraphView& g, const std::vector<char>& materialized,
                                 int matmul, int which) {
    ContractOperand op;
    int node = g.inputs[size_t(matmul)][size_t(which)];
    const int64_t batches = matrices(g.node(node).shape).count;
    for (;;) {
        if (materialized[size_t(node)]) break;
        const auto* v = g.node(node).as<graph::op::View>();
        if (!v) break;
        const int in = g.inputs[size_t(node)][0];
        const Matrices from = matrices(g.node(in).shape);
        const Matrices to = matrices(g.node(node).shape);
        bool through = false;
        switch (v->kind) {
            case graph::ViewKind::permute:
                through = swaps_last_two(v->a);
                if (through) op.transposed = !op.transposed;
                break;
            case graph::ViewKind::expand:
                // Only a whole broadcast batch: the matrices themselves are not expanded.
                through = from.rows == to.rows && from.cols == to.cols && from.count == 1;
                if (through) op.shared = true;
                break;
            case graph::ViewKind::reshape:
                // Batch axes regrouped or unit axes added: the matrices keep their layout.
                through = from.rows == to.rows && from.cols == to.cols && from.count == to.count;
                break;
            default:
                break;
        }
        if (!through) break;
        node = in;
    }
    op.source = node;
    if (batches == 1) op.shared = false;
    return op;
}

}  // namespace kiln::plan
