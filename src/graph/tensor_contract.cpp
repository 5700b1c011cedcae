// Contractions of the graph: matmul (torch.matmul's shapes: vectors, matrices and broadcast
// batches) and linear (x · wᵀ + bias). The Matmul node is ops::matmul's exact class; its operands
// reach it as views (transposes and broadcast batches cost no copy where the planner can read
// them in place).
#include <fmt/format.h>

#include <limits>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

// The kernel indexes its operands and result with 32-bit integers.
constexpr int64_t kMaxContractionElements = std::numeric_limits<int32_t>::max();

void require_matmul_operand(const Tensor& x, const char* what, const Tensor& a, const Tensor& b) {
    if (x.rank() == 0)
        fail("matmul: {} is a scalar ({} · {}); expected a vector or a matrix (a batch of them)",
             what, graph::to_string(a.shape()), graph::to_string(b.shape()));
    if (!is_float(x.dtype()))
        fail("matmul: {} is {} {}; expected f32, f16 or bf16", what, name(x.dtype()),
             graph::to_string(x.shape()));
    if (x.numel() > kMaxContractionElements)
        fail("matmul: {} {} has {} elements; expected at most {} (32-bit indices)", what,
             graph::to_string(x.shape()), x.numel(), kMaxContractionElements);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
    require_matmul_operand(a, "a", a, b);
    require_matmul_operand(b, "b", a, b);
    graph::common_device({a.node().get(), b.node().get()}, "matmul");
    if (a.dtype() != b.dtype())
        fail("matmul: a is {} {} and b is {} {}; expected one dtype", name(a.dtype()),
             graph::to_string(a.shape()), name(b.dtype()), graph::to_string(b.shape()));
    // Vectors as matrices: a [k] as [1, k], b [k] as [k, 1]; the axis is dropped at the end.
    const Tensor am = a.rank() == 1 ? a.unsqueeze(0) : a;
    const Tensor bm = b.rank() == 1 ? b.unsqueeze(1) : b;
    const int64_t m = am.shape()[am.rank() - 2], k = am.shape()[am.rank() - 1];
    const int64_t kb = bm.shape()[bm.rank() - 2], n = bm.shape()[bm.rank() - 1];
    if (k != kb)
        fail(
            "matmul: inner dimensions differ: a {} is [..., m, k] with k = {}, b {} is "
            "[..., k, n] with k = {}; expected equal",
            graph::to_string(a.shape()), k, graph::to_string(b.shape()), kb);
    const Shape a_batch(am.shape().begin(), am.shape().end() - 2);
    const Shape b_batch(bm.shape().begin(), bm.shape().end() - 2);
    const Shape batch = graph::broadcast_shapes(a_batch, b_batch, "matmul (batch axes)");
    Shape out = batch;
    out.push_back(m);
    out.push_back(n);
    if (graph::checked_element_count(out, "matmul") > kMaxContractionElements)
        fail("matmul: the result {} has {} elements; expected at most {} (32-bit indices)",
             graph::to_string(out), graph::element_count(out), kMaxContractionElements);
    Tensor c;
    if (k == 0) {
        // A sum of no terms: +0 everywhere.
        c = Tensor::zeros(out, a.dtype(), a.device());
    } else {
        Shape as = batch, bs = batch;
        as.insert(as.end(), {m, k});
        bs.insert(bs.end(), {k, n});
        for (int64_t e : {graph::element_count(as), graph::element_count(bs)})
            if (e > kMaxContractionElements)
                fail(
                    "matmul: a {} and b {} broadcast to {} elements; expected at most {} "
                    "(32-bit indices)",
                    graph::to_string(a.shape()), graph::to_string(b.shape()), e,
                    kMaxContractionElements);
        c = Tensor(graph::make_node(graph::op::Matmul{}, a.dtype(), out,
                                    {graph::broadcast_node(am.node(), as, "matmul"),
                                     graph::broadcast_node(bm.node(), bs, "matmul")},
                                    &a.device()));
    }
    if (a.rank() == 1) c = c.squeeze(static_cast<int64_t>(c.rank()) - 2);
    if (b.rank() == 1) c = c.squeeze(-1);
    return c;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias) {
    if (weight.rank() != 2)
        fail("linear: weight is {}; expected [out_features, in_features]",
             graph::to_string(weight.shape()));
    if (x.rank() == 0 || x.shape().back() != weight.shape()[1])
        fail("linear: x is {} and weight {}; expected x's last axis to be in_features = {}",
             graph::to_string(x.shape()), graph::to_string(weight.shape()), weight.shape()[1]);
    Tensor y = matmul(x, weight.transpose(0, 1));
    if (!bias) return y;
    if (bias->rank() != 1 || bias->shape()[0] != weight.shape()[0] || bias->dtype() != x.dtype())
        fail("linear: bias is {} {}; expected {} [{}] (out_features)", name(bias->dtype()),
             graph::to_string(bias->shape()), name(x.dtype()), weight.shape()[0]);
    return y + *bias;
}

}  // namespace kiln
