// Checked node builders shared by the tensor ops.
#include "graph/build.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "kiln/error.hpp"

namespace kiln::graph {

Device* common_device(const std::vector<const Node*>& inputs, const char* op) {
    Device* device = nullptr;
    for (const Node* n : inputs) {
        if (!n) fail("{}: an operand is an empty Tensor", op);
        if (!device) device = n->device;
        if (n->device != device)
            fail(
                "{}: operands live on different devices ({} and {}); move one with to(device) "
                "first",
                op, device->info().id, n->device->info().id);
    }
    return device;
}

namespace {

// Whether `value` is exactly representable in integer dtype t.
bool fits_integer(double value, DType t) {
    if (std::nearbyint(value) != value) return false;
    switch (t) {
        case DType::boolean:
            return value == 0 || value == 1;
        case DType::i8:
            return value >= -128 && value <= 127;
        case DType::u8:
            return value >= 0 && value <= 255;
        case DType::i32:
            return value >= INT32_MIN && value <= INT32_MAX;
        case DType::u32:
            return value >= 0 && value <= UINT32_MAX;
        default:
            return value >= -9.2233720368547758e18 && value < 9.2233720368547758e18;
    }
}

}  // namespace

NodeRef constant_node(double value, DType dtype, const Shape& shape, Device* device,
                      const char* op) {
    if (!is_float(dtype) && !fits_integer(value, dtype))
        fail("{}: the number {} is not a {} value", op, value, name(dtype));
    checked_element_count(shape, op);
    return make_node(op::Constant{value}, dtype, shape, {}, device);
}

NodeRef broadcast_node(const NodeRef& x, const Shape& shape, const char* op) {
    if (x->shape == shape) return x;
    const Shape b = broadcast_shapes(x->shape, shape, op);
    if (b != shape)
        fail("{}: a tensor of shape {} cannot be broadcast to {}", op, to_string(x->shape),
             to_string(shape));
    return make_node(op::View{ViewKind::expand, shape}, x->dtype, shape, {x}, x->device);
}

NodeRef map_node(MapOp op, DType out, std::vector<NodeRef> inputs) {
    std::vector<const Node*> raw;
    for (const auto& i : inputs) raw.push_back(i.get());
    Device* device = common_device(raw, name(op));
    Shape shape = inputs.at(0)->shape;
    for (size_t i = 1; i < inputs.size(); ++i)
        shape = broadcast_shapes(shape, inputs[i]->shape, name(op));
    checked_element_count(shape, name(op));
    for (auto& i : inputs) i = broadcast_node(i, shape, name(op));
    return make_node(op::Map{op}, out, std::move(shape), std::move(inputs), device);
}

NodeRef view_node(ViewKind kind, const NodeRef& x, Shape shape, std::vector<int64_t> a,
                  std::vector<int64_t> b, double pad_value) {
    return make_node(op::View{kind, std::move(a), std::move(b), pad_value}, x->dtype,
                     std::move(shape), {x}, x->device);
}

NodeRef reshape_node(const NodeRef& x, const Shape& shape) {
    if (x->shape == shape) return x;
    return view_node(ViewKind::reshape, x, shape, shape);
}

Shape reduced_shape(const Shape& shape, const std::vector<int>& axes, bool keepdim) {
    Shape out;
    for (size_t i = 0; i < shape.size(); ++i) {
        const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
        if (!reduced)
            out.push_back(shape[i]);
        else if (keepdim)
            out.push_back(1);
    }
    return out;
}

NodeRef fold_node(FoldKind kind, const NodeRef& x, const std::vector<int>& axes) {
    return make_node(op::Fold{kind, axes}, x->dtype, reduced_shape(x->shape, axes, false), {x},
                     x->device);
}

void label_graph(const NodeRef& root, const std::vector<NodeRef>& inputs,
                 const std::string& label) {
    std::unordered_set<const Node*> stop, seen;
    for (const auto& i : inputs) stop.insert(i.get());
    std::function<void(const NodeRef&)> walk = [&](const NodeRef& n) {
        if (stop.count(n.get()) || !seen.insert(n.get()).second || n->resolved()) return;
        if (n->label.empty()) n->label = label;
        for (const auto& i : n->inputs) walk(i);
    };
    walk(root);
}

}  // namespace kiln::graph
