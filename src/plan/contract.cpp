// Contraction operands: peeling the views a matmul kernel reads through.
#include "plan/contract.hpp"

#include "ops/matmul/matmul.hpp"

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

// Whether the device's contraction points read an operand through a view at little cost. The
// CPU's do not: a vector of a matmul's register tile would gather one element per row of a
// transposed operand (MiniLM's linears took 10 to 20 times a dense operand's time,
// notes/cpu-linear-layout-2026-12-05.md), and attention reads each K and V element as one scalar
// for a vector of rows, so a view's index arithmetic runs per element (contract.hpp). There the
// view is materialized as a dense copy first.
bool reads_views_in_place(const Device* device) {
    return device == nullptr || device->info().backend != Backend::cpu;
}

// Whether view v (input shape `from`) keeps the leading columns of every matrix and all of its
// rows and batches: what a matmul reads in place with the input's row length as its leading
// dimension. Taken on the CPU alone, where matmul's b may be such a view of a copy with longer
// rows (tensor/tensor_contract.cpp, padded_for_cpu); the GPUs' points are not written for it.
bool leading_columns(const graph::op::View& v, const graph::Shape& from, const Device* device) {
    if (reads_views_in_place(device) || v.kind != graph::ViewKind::slice || from.size() < 2)
        return false;
    for (size_t i = 0; i < from.size(); ++i)
        if (v.a[i] != 0 || v.b[i] != 1) return false;
    return true;
}

}  // namespace

bool is_contraction(const graph::Node& n) {
    return !n.resolved() &&
           (n.as<graph::op::Matmul>() || n.as<graph::op::Conv1d>() || n.as<graph::op::Attention>());
}

LaunchKind contraction_kind(const graph::Node& n) {
    if (n.as<graph::op::Conv1d>()) return LaunchKind::conv1d;
    if (n.as<graph::op::Attention>()) return LaunchKind::attention;
    return LaunchKind::contract;
}

ops::Conv1dShape conv1d_shape(const GraphView& g, int conv) {
    const auto& c = *g.node(conv).as<graph::op::Conv1d>();
    const graph::Shape& x = g.node(g.inputs[size_t(conv)][0]).shape;
    const graph::Shape& w = g.node(g.inputs[size_t(conv)][1]).shape;
    return {x[0], x[1], x[2], w[0], w[2], {c.stride, c.padding, c.dilation, c.groups}};
}

ops::AttentionShape attention_shape(const GraphView& g, int attention) {
    const graph::Shape& q = g.node(g.inputs[size_t(attention)][0]).shape;
    const graph::Shape& k = g.node(g.inputs[size_t(attention)][1]).shape;
    return {q[0], q[1], k[1], q[2], k[2], q[3]};
}

ops::AttentionOptions attention_options(const GraphView& g, int attention) {
    const auto* a = g.node(attention).as<graph::op::Attention>();
    return {a->causal, a->scale, g.node(attention).dtype, a->arithmetic};
}

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
    if (!g.node(matmul).as<graph::op::Matmul>()) {
        op.source = node;
        return op;
    }
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
                through = swaps_last_two(v->a) && reads_views_in_place(g.node(matmul).device);
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
            case graph::ViewKind::slice:
                // Under the operand's whole-batch broadcast and reshapes alone (the matrices
                // as the slice leaves them), and the last view peeled.
                if (op.transposed || from.rows != to.rows || from.count != to.count ||
                    !leading_columns(*v, g.node(in).shape, g.node(matmul).device))
                    break;
                op.row_length = from.cols;
                op.source = in;
                if (batches == 1 || from.count == 1) op.shared = true;
                return op;
            default:
                break;
        }
        if (!through) break;
        node = in;
    }
    op.source = node;
    // One matrix (in the source, or for the one batch) is every batch's: batch stride 0, so the
    // kernel's indices carry no batch term.
    if (batches == 1 || matrices(g.node(node).shape).count == 1) op.shared = true;
    return op;
}

bool prologue_fusible(const GraphView& g, const std::vector<char>& materialized, int contraction,
                      int source) {
    const graph::Node& c = g.node(contraction);
    const bool views_allowed = !c.as<graph::op::Attention>() || reads_views_in_place(c.device);
    std::vector<int> work{source};
    std::vector<char> seen(g.size(), 0);
    int nodes = 0;
    bool maps = false;
    while (!work.empty()) {
        const int n = work.back();
        work.pop_back();
        if (seen[size_t(n)] || materialized[size_t(n)]) continue;
        seen[size_t(n)] = 1;
        const graph::Node& node = g.node(n);
        const auto* map = node.as<graph::op::Map>();
        const bool fits =
            !node.resolved() && ((map && graph::info(map->op).prologue) ||
                                 node.as<graph::op::View>() || node.as<graph::op::Constant>());
        if (!fits || ++nodes > kMaxPrologueNodes) return false;
        if (node.as<graph::op::View>() && !views_allowed) return false;
        maps = maps || map;
        for (int in : g.inputs[size_t(n)]) work.push_back(in);
    }
    return maps;
}

std::vector<int> split_variants(const GraphView& g, int matmul) {
    const graph::Node& mm = g.node(matmul);
    const ContractShape sh = contract_shape(g, matmul);
    const auto& all = ops::matmul_all_variants();
    std::vector<int> out;
    for (const ops::MatmulSchedule& p : ops::matmul_points_for(
             *mm.device, mm.as<graph::op::Matmul>()->arithmetic, {sh.batch, sh.m, sh.n, sh.k}))
        if (p.split_k)
            for (size_t v = 0; v < all.size(); ++v)
                if (all[v].name == p.name) out.push_back(int(v));
    return out;
}

}  // namespace kiln::plan
