// Contractions of the graph: matmul (torch.matmul's shapes: vectors, matrices and broadcast
// batches), linear (x · wᵀ + bias), conv1d and scaled_dot_product_attention. The Matmul node is
// ops::matmul's exact class, or its tensor-core class where the caller asks; its operands reach it
// as views (transposes and broadcast batches cost no copy where the planner can read them in
// place). Conv1d and Attention nodes are ops::conv1d's and ops::attention's exact class, reading
// dense operands. dequantize_blocks (and dequantize_q8_0) writes block-quantized weights'
// dequantization as maps a matmul's operand can compute as it reads them.
#include <fmt/format.h>

#include <limits>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"

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

// b as the contraction reads it: on the CPU, rows a multiple of 1 KiB apart are read as the
// leading columns of a copy with longer rows (ops::pads_b_rows; plan/contract.cpp reads the
// columns in place, docs/graph.md), where b is views of data (no computation to materialize
// instead).
Tensor padded_for_cpu(const Tensor& b, int64_t m) {
    if (b.rank() < 2) return b;
    const int64_t k = b.shape()[b.rank() - 2], n = b.shape().back();
    const int64_t size = static_cast<int64_t>(size_of(b.dtype()));
    bool transposed = false;
    const graph::Node* node = b.node().get();
    while (const auto* v = node->as<graph::op::View>()) {
        transposed = transposed || v->kind == graph::ViewKind::permute;
        node = node->inputs[0].get();
    }
    if (!node->resolved() || !ops::pads_b_rows(b.device(), n, size, m, k, transposed)) return b;
    std::vector<std::pair<int64_t, int64_t>> widths(b.rank(), {0, 0});
    widths.back().second = ops::kPaddedRowBytes / size;
    if (b.numel() / n * (n + widths.back().second) > kMaxContractionElements) return b;
    return b.pad(widths).slice(-1, 0, n);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, MatmulClass arithmetic) {
    require_matmul_operand(a, "a", a, b);
    require_matmul_operand(b, "b", a, b);
    graph::common_device({a.node().get(), b.node().get()}, "matmul");
    if (a.dtype() != b.dtype())
        fail("matmul: a is {} {} and b is {} {}; expected one dtype", name(a.dtype()),
             graph::to_string(a.shape()), name(b.dtype()), graph::to_string(b.shape()));
    ops::check_class(arithmetic, a.dtype());
    // Vectors as matrices: a [k] as [1, k], b [k] as [k, 1]; the axis is dropped at the end.
    const Tensor am = a.rank() == 1 ? a.unsqueeze(0) : a;
    const int64_t m = am.shape()[am.rank() - 2], k = am.shape()[am.rank() - 1];
    const Tensor bm = padded_for_cpu(b.rank() == 1 ? b.unsqueeze(1) : b, m);
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
        c = Tensor(graph::make_node(graph::op::Matmul{arithmetic}, a.dtype(), out,
                                    {graph::broadcast_node(am.node(), as, "matmul"),
                                     graph::broadcast_node(bm.node(), bs, "matmul")},
                                    &a.device()));
    }
    if (a.rank() == 1) c = c.squeeze(static_cast<int64_t>(c.rank()) - 2);
    if (b.rank() == 1) c = c.squeeze(-1);
    return c;
}

Tensor dequantize_blocks(const Tensor& values, const Tensor& scales, const Tensor* mins) {
    const Shape& shape = values.shape();
    if (values.dtype() != DType::i8 || values.rank() == 0)
        fail("dequantize_blocks: values are {} {}; expected i8 with at least one axis",
             name(values.dtype()), graph::to_string(shape));
    const int64_t k = shape.back();
    const int64_t blocks_per_row = scales.rank() == values.rank() ? scales.shape().back() : 0;
    Shape blocks = shape;
    blocks.back() = blocks_per_row;
    if (!is_float(scales.dtype()) || blocks_per_row <= 0 || k % blocks_per_row != 0 ||
        scales.shape() != blocks)
        fail(
            "dequantize_blocks: scales are {} {} for values {}; expected a float dtype and the "
            "values' shape with its last axis k = {} cut into whole blocks (one scale each)",
            name(scales.dtype()), graph::to_string(scales.shape()), graph::to_string(shape), k);
    if (mins && (!is_float(mins->dtype()) || mins->shape() != scales.shape()))
        fail("dequantize_blocks: mins are {} {}; expected a float dtype and the scales' shape {}",
             name(mins->dtype()), graph::to_string(mins->shape()),
             graph::to_string(scales.shape()));
    Shape per_value = blocks, per_block = blocks;
    per_value.push_back(k / blocks_per_row);
    per_block.push_back(1);
    Tensor dequantized =
        values.to(DType::f32).reshape(per_value) * scales.to(DType::f32).reshape(per_block);
    if (mins) dequantized = dequantized - mins->to(DType::f32).reshape(per_block);
    return dequantized.reshape(shape);
}

Tensor dequantize_q8_0(const Tensor& values, const Tensor& scales) {
    constexpr int64_t kBlock = 32;
    if (values.dtype() != DType::i8 || values.rank() == 0 || values.shape().back() % kBlock != 0)
        fail(
            "dequantize_q8_0: values are {} {}; expected i8 with a last axis that is a multiple "
            "of {}",
            name(values.dtype()), graph::to_string(values.shape()), kBlock);
    Shape blocks = values.shape();
    blocks.back() /= kBlock;
    if (!is_float(scales.dtype()) || scales.shape() != blocks)
        fail("dequantize_q8_0: scales are {} {} for values {}; expected a float dtype and {}",
             name(scales.dtype()), graph::to_string(scales.shape()),
             graph::to_string(values.shape()), graph::to_string(blocks));
    return dequantize_blocks(values, scales);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias, MatmulClass arithmetic) {
    if (weight.rank() != 2)
        fail("linear: weight is {}; expected [out_features, in_features]",
             graph::to_string(weight.shape()));
    if (x.rank() == 0 || x.shape().back() != weight.shape()[1])
        fail("linear: x is {} and weight {}; expected x's last axis to be in_features = {}",
             graph::to_string(x.shape()), graph::to_string(weight.shape()), weight.shape()[1]);
    Tensor y = matmul(x, weight.transpose(0, 1), arithmetic);
    if (!bias) return y;
    if (bias->rank() != 1 || bias->shape()[0] != weight.shape()[0] || bias->dtype() != x.dtype())
        fail("linear: bias is {} {}; expected {} [{}] (out_features)", name(bias->dtype()),
             graph::to_string(bias->shape()), name(x.dtype()), weight.shape()[0]);
    return y + *bias;
}

namespace {

// One float dtype and one device for a contraction's operands.
void require_float_operands(const char* op, const std::vector<std::pair<const char*, Tensor>>& in) {
    std::vector<const graph::Node*> nodes;
    for (const auto& [what, t] : in) {
        if (!is_float(t.dtype()))
            fail("{}: {} is {} {}; expected f32, f16 or bf16", op, what, name(t.dtype()),
                 graph::to_string(t.shape()));
        if (t.dtype() != in[0].second.dtype())
            fail("{}: {} is {} {} but {} is {}; expected one dtype", op, what, name(t.dtype()),
                 graph::to_string(t.shape()), in[0].first, name(in[0].second.dtype()));
        nodes.push_back(t.node().get());
    }
    graph::common_device(nodes, op);
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor* bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups, MatmulClass arithmetic) {
    if (x.rank() != 2 && x.rank() != 3)
        fail("conv1d: x is {}; expected [batch, in_channels, length] or [in_channels, length]",
             graph::to_string(x.shape()));
    if (weight.rank() != 3)
        fail("conv1d: weight is {}; expected [out_channels, in_channels/groups, kernel]",
             graph::to_string(weight.shape()));
    require_float_operands("conv1d", {{"x", x}, {"weight", weight}});
    const Tensor xb = x.rank() == 2 ? x.unsqueeze(0) : x;
    ops::Conv1dShape sh{xb.shape()[0],     xb.shape()[1],     xb.shape()[2],
                        weight.shape()[0], weight.shape()[2], {stride, padding, dilation, groups}};
    ops::conv1d_check_shape(sh);
    ops::check_class(arithmetic, x.dtype(), "conv1d");
    if (weight.shape()[1] * groups != sh.in_channels)
        fail(
            "conv1d: weight {} has {} input channels per group but x {} has {} channels in {} "
            "groups; expected weight [out_channels, {}, kernel]",
            graph::to_string(weight.shape()), weight.shape()[1], graph::to_string(x.shape()),
            sh.in_channels, groups, sh.in_channels / groups);
    Tensor y(graph::make_node(graph::op::Conv1d{stride, padding, dilation, groups, arithmetic},
                              x.dtype(), {sh.batch, sh.out_channels, sh.out_length()},
                              {xb.node(), weight.node()}, &x.device()));
    if (bias) {
        if (bias->rank() != 1 || bias->shape()[0] != sh.out_channels || bias->dtype() != x.dtype())
            fail("conv1d: bias is {} {}; expected {} [{}] (out_channels)", name(bias->dtype()),
                 graph::to_string(bias->shape()), name(x.dtype()), sh.out_channels);
        y = y + bias->reshape({sh.out_channels, 1});
    }
    return x.rank() == 2 ? y.squeeze(0) : y;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                    std::optional<double> scale, const Tensor* key_lengths,
                                    MatmulClass arithmetic) {
    const size_t r = q.rank();
    if ((r != 3 && r != 4) || k.rank() != r || v.rank() != r)
        fail(
            "scaled_dot_product_attention: q {}, k {}, v {}; expected q [batch, heads, seq_q, "
            "head_dim] and k, v [batch, kv_heads, seq_k, head_dim] (or all without batch)",
            graph::to_string(q.shape()), graph::to_string(k.shape()), graph::to_string(v.shape()));
    require_float_operands("scaled_dot_product_attention", {{"q", q}, {"k", k}, {"v", v}});
    const Tensor qb = r == 3 ? q.unsqueeze(0) : q;
    const Tensor kb = r == 3 ? k.unsqueeze(0) : k;
    const Tensor vb = r == 3 ? v.unsqueeze(0) : v;
    const Shape& qs = qb.shape();
    const Shape& ks = kb.shape();
    if (ks != vb.shape() || ks[0] != qs[0] || ks[3] != qs[3])
        fail(
            "scaled_dot_product_attention: q {}, k {}, v {}; expected k and v of one shape with "
            "q's batch and head_dim",
            graph::to_string(q.shape()), graph::to_string(k.shape()), graph::to_string(v.shape()));
    const ops::AttentionShape sh{qs[0], qs[1], ks[1], qs[2], ks[2], qs[3]};
    ops::AttentionOptions options{causal, std::nullopt, q.dtype(), arithmetic};
    if (scale) options.scale = static_cast<float>(*scale);
    ops::attention_check_shape(sh, options, q.dtype());
    std::vector<graph::NodeRef> inputs{qb.node(), kb.node(), vb.node()};
    if (key_lengths) {
        if (key_lengths->dtype() != DType::i32 || key_lengths->shape() != Shape{sh.batch})
            fail(
                "scaled_dot_product_attention: key_lengths is {} {}; expected i32 [{}] (one "
                "length per batch)",
                name(key_lengths->dtype()), graph::to_string(key_lengths->shape()), sh.batch);
        graph::common_device({q.node().get(), key_lengths->node().get()},
                             "scaled_dot_product_attention");
        inputs.push_back(key_lengths->node());
    }
    Tensor o(graph::make_node(
        graph::op::Attention{causal, ops::attention_scale(sh, options), arithmetic}, q.dtype(), qs,
        std::move(inputs), &q.device()));
    return r == 3 ? o.squeeze(0) : o;
}

}  // namespace kiln
