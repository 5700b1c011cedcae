// View ops (reshape, permute, expand, slice, pad, squeeze/unsqueeze) and concat: index maps,
// never copies.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

using graph::NodeRef;
using graph::ViewKind;

Tensor Tensor::reshape(const Shape& shape) const {
    const auto& x = node();
    Shape out = shape;
    int64_t known = 1;
    int inferred = -1;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
            if (inferred >= 0)
                fail("reshape: shape {} has two -1 extents", graph::to_string(shape));
            inferred = static_cast<int>(i);
        } else if (out[i] < 0) {
            fail("reshape: shape {} has a negative extent", graph::to_string(shape));
        } else {
            known = out[i] ? known * out[i] : 0;
            graph::checked_element_count(Shape(out.begin(), out.begin() + i + 1), "reshape");
        }
    }
    if (inferred >= 0) {
        if (known == 0 || x->numel() % known != 0)
            fail("reshape: cannot reshape {} ({} elements) to {}", graph::to_string(x->shape),
                 x->numel(), graph::to_string(shape));
        out[static_cast<size_t>(inferred)] = x->numel() / known;
    }
    if (graph::checked_element_count(out, "reshape") != x->numel())
        fail("reshape: cannot reshape {} ({} elements) to {} ({} elements)",
             graph::to_string(x->shape), x->numel(), graph::to_string(out),
             graph::element_count(out));
    return Tensor(graph::reshape_node(x, out));
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
    const auto& x = node();
    if (order.size() != x->shape.size())
        fail("permute: order [{}] for a tensor of rank {} ({}); expected one entry per axis",
             fmt::join(order, ", "), x->shape.size(), graph::to_string(x->shape));
    std::vector<int64_t> norm;
    for (int64_t a : order) norm.push_back(graph::normalize_axis(a, x->shape.size(), "permute"));
    std::vector<int64_t> sorted = norm;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        fail("permute: order [{}] names an axis twice", fmt::join(order, ", "));
    Shape shape;
    for (int64_t a : norm) shape.push_back(x->shape[static_cast<size_t>(a)]);
    bool identity = true;
    for (size_t i = 0; i < norm.size(); ++i) identity = identity && norm[i] == int64_t(i);
    if (identity) return *this;
    return Tensor(graph::view_node(ViewKind::permute, x, shape, norm));
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
    std::vector<int64_t> order(rank());
    std::iota(order.begin(), order.end(), 0);
    std::swap(order[static_cast<size_t>(graph::normalize_axis(a, rank(), "transpose"))],
              order[static_cast<size_t>(graph::normalize_axis(b, rank(), "transpose"))]);
    return permute(order);
}

Tensor Tensor::expand(const Shape& shape) const {
    graph::checked_element_count(shape, "expand");
    return Tensor(graph::broadcast_node(node(), shape, "expand"));
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
    const auto& x = node();
    const int ax = graph::normalize_axis(axis, x->shape.size(), "slice");
    if (step < 1) fail("slice: step {}; expected 1 or more", step);
    const int64_t n = x->shape[static_cast<size_t>(ax)];
    auto clamp = [n](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t{0}, n); };
    const int64_t b = clamp(start), e = clamp(stop);
    const int64_t len = e > b ? (e - b + step - 1) / step : 0;
    if (b == 0 && len == n && step == 1) return *this;
    std::vector<int64_t> starts(x->shape.size(), 0), steps(x->shape.size(), 1);
    starts[static_cast<size_t>(ax)] = b;
    steps[static_cast<size_t>(ax)] = step;
    Shape shape = x->shape;
    shape[static_cast<size_t>(ax)] = len;
    return Tensor(graph::view_node(ViewKind::slice, x, shape, starts, steps));
}

Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& widths, double value) const {
    const auto& x = node();
    if (widths.size() != x->shape.size())
        fail("pad: {} pairs of widths for a tensor of rank {} ({}); expected one per axis",
             widths.size(), x->shape.size(), graph::to_string(x->shape));
    std::vector<int64_t> before, after;
    Shape shape = x->shape;
    for (size_t i = 0; i < widths.size(); ++i) {
        if (widths[i].first < 0 || widths[i].second < 0)
            fail("pad: widths ({}, {}) on axis {}; expected non-negative widths", widths[i].first,
                 widths[i].second, i);
        before.push_back(widths[i].first);
        after.push_back(widths[i].second);
        shape[i] += widths[i].first + widths[i].second;
    }
    graph::checked_element_count(shape, "pad");
    if (shape == x->shape) return *this;
    graph::constant_node(value, x->dtype, {}, x->device, "pad");  // checks the value fits
    return Tensor(graph::view_node(ViewKind::pad, x, shape, before, after, value));
}

Tensor Tensor::squeeze(int64_t axis) const {
    const int ax = graph::normalize_axis(axis, rank(), "squeeze");
    if (shape()[static_cast<size_t>(ax)] != 1)
        fail("squeeze: axis {} of {} has extent {}; expected 1", axis, graph::to_string(shape()),
             shape()[static_cast<size_t>(ax)]);
    Shape s = shape();
    s.erase(s.begin() + ax);
    return reshape(s);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
    const int ax = graph::normalize_axis(axis, rank() + 1, "unsqueeze");
    Shape s = shape();
    s.insert(s.begin() + ax, 1);
    return reshape(s);
}

Tensor Tensor::flatten() const {
    return reshape({numel()});
}

Tensor concat(const std::vector<Tensor>& parts, int64_t axis) {
    if (parts.empty()) fail("concat: no tensors to concatenate");
    std::vector<const graph::Node*> raw;
    std::vector<NodeRef> inputs;
    for (const auto& p : parts) {
        raw.push_back(p.node().get());
        inputs.push_back(p.node());
    }
    Device* device = graph::common_device(raw, "concat");
    const auto& first = inputs[0];
    const int ax = graph::normalize_axis(axis, first->shape.size(), "concat");
    Shape shape = first->shape;
    shape[static_cast<size_t>(ax)] = 0;
    for (const auto& in : inputs) {
        if (in->dtype != first->dtype)
            fail("concat: dtypes differ ({} and {}); cast first", name(first->dtype),
                 name(in->dtype));
        bool same = in->shape.size() == first->shape.size();
        for (size_t i = 0; same && i < in->shape.size(); ++i)
            same = i == static_cast<size_t>(ax) || in->shape[i] == first->shape[i];
        if (!same)
            fail("concat: shapes {} and {} differ off axis {}", graph::to_string(first->shape),
                 graph::to_string(in->shape), ax);
        shape[static_cast<size_t>(ax)] += in->shape[static_cast<size_t>(ax)];
    }
    graph::checked_element_count(shape, "concat");
    if (inputs.size() == 1) return parts[0];
    return Tensor(
        graph::make_node(graph::op::Concat{ax}, first->dtype, shape, std::move(inputs), device));
}

}  // namespace kiln
