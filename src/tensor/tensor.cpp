// kiln::Tensor's handle, creation and data access. Realizing a graph is the planner's job
// (plan/resolve.hpp).
#include "kiln/tensor.hpp"

#include <cmath>

#include "graph/build.hpp"
#include "graph/node.hpp"
#include "kiln/error.hpp"
#include "kiln/program.hpp"
#include "plan/resolve.hpp"

namespace kiln {

using graph::NodeRef;

namespace {

const graph::Node& node_of(const std::shared_ptr<graph::Node>& n) {
    if (!n) fail("an empty Tensor was used; assign it a value first");
    return *n;
}

void require_float(DType dtype, const char* op) {
    if (!is_float(dtype)) fail("{}: dtype {}; expected f32, f16 or bf16", op, name(dtype));
}

}  // namespace

Tensor::Tensor(std::shared_ptr<graph::Node> node) : node_(std::move(node)) {}

Tensor Tensor::from_bytes(const void* data, size_t count, DType dtype, const Shape& shape,
                          Device& device) {
    const int64_t n = graph::checked_element_count(shape, "from_host");
    if (static_cast<size_t>(n) != count)
        fail("from_host: shape {} holds {} elements; got {} values", graph::to_string(shape), n,
             count);
    auto buffer = std::make_shared<Buffer>(device, dtype, count);
    if (count) buffer->upload_raw(data, dtype, count);
    return from_buffer(std::move(buffer), shape);
}

Tensor Tensor::from_buffer(std::shared_ptr<Buffer> buffer, const Shape& shape) {
    if (!buffer) fail("from_buffer: no buffer");
    const int64_t n = graph::checked_element_count(shape, "from_buffer");
    if (static_cast<size_t>(n) != buffer->count())
        fail("from_buffer: shape {} holds {} elements; the buffer has {}", graph::to_string(shape),
             n, buffer->count());
    auto node = graph::make_node(graph::op::Leaf{}, buffer->dtype(), shape, {}, &buffer->device());
    node->buffer = std::move(buffer);
    return Tensor(std::move(node));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device& d) {
    return full(shape, 0, dtype, d);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device& d) {
    return full(shape, 1, dtype, d);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device& d) {
    return Tensor(graph::constant_node(value, dtype, shape, &d, "full"));
}

Tensor Tensor::arange(double start, double stop, double step, DType dtype, Device& d) {
    if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop))
        fail("arange: start {}, stop {}, step {}; expected finite values and a non-zero step",
             start, stop, step);
    if (!is_float(dtype) &&
        (std::nearbyint(start) != start || std::nearbyint(step) != step || dtype == DType::boolean))
        fail("arange: start {} and step {} must be integers for dtype {}", start, step,
             name(dtype));
    const double count = std::ceil((stop - start) / step);
    if (count > static_cast<double>(graph::kMaxElements))
        fail("arange: {} elements; at most 2^56", count);
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    return Tensor(graph::make_node(
        graph::op::Generate{graph::op::GenerateKind::arange, start, step}, dtype, {n}, {}, &d));
}

Tensor Tensor::arange(int64_t n, DType dtype, Device& d) {
    return arange(0, static_cast<double>(n), 1, dtype, d);
}

Tensor Tensor::linspace(double start, double stop, int64_t steps, DType dtype, Device& d) {
    require_float(dtype, "linspace");
    if (steps < 0) fail("linspace: {} steps; expected steps >= 0", steps);
    graph::checked_element_count({steps}, "linspace");
    if (!std::isfinite(start) || !std::isfinite(stop))
        fail("linspace: start {} and stop {}; expected finite values", start, stop);
    if (steps <= 1) return full({steps}, start, dtype, d);
    const auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
    const double first = f32(start), last = f32(stop);
    const double step = f32((last - first) / static_cast<double>(steps - 1));
    const Tensor i = arange(steps, DType::f32, d);
    const Tensor rising = i * step + first;
    const Tensor falling = last - (static_cast<double>(steps - 1) - i) * step;
    return cast(where(i < static_cast<double>(steps / 2), rising, falling), dtype);
}

Tensor Tensor::rand(const Shape& shape, uint64_t seed, DType dtype, Device& d) {
    require_float(dtype, "rand");
    graph::checked_element_count(shape, "rand");
    return Tensor(graph::make_node(graph::op::Generate{graph::op::GenerateKind::rand, 0, 1, seed},
                                   dtype, shape, {}, &d));
}

Tensor Tensor::randn(const Shape& shape, uint64_t seed, DType dtype, Device& d) {
    require_float(dtype, "randn");
    graph::checked_element_count(shape, "randn");
    return Tensor(graph::make_node(graph::op::Generate{graph::op::GenerateKind::randn, 0, 1, seed},
                                   dtype, shape, {}, &d));
}

Tensor full_like(const Tensor& x, double value, std::optional<DType> dtype) {
    return Tensor::full(x.shape(), value, dtype.value_or(x.dtype()), x.device());
}
Tensor zeros_like(const Tensor& x, std::optional<DType> dtype) {
    return full_like(x, 0, dtype);
}
Tensor ones_like(const Tensor& x, std::optional<DType> dtype) {
    return full_like(x, 1, dtype);
}

const Shape& Tensor::shape() const {
    return node_of(node_).shape;
}
DType Tensor::dtype() const {
    return node_of(node_).dtype;
}
Device& Tensor::device() const {
    return *node_of(node_).device;
}
int64_t Tensor::numel() const {
    return node_of(node_).numel();
}
int64_t Tensor::size(int64_t axis) const {
    return shape()[static_cast<size_t>(graph::normalize_axis(axis, rank(), "size"))];
}
bool Tensor::resolved() const {
    return node_of(node_).resolved();
}
const std::shared_ptr<graph::Node>& Tensor::node() const {
    node_of(node_);
    return node_;
}

Tensor& Tensor::resolve() {
    node_of(node_);
    if (tracing()) return *this;  // the program's trace plans everything at once
    plan::resolve({node_});
    return *this;
}

void resolve(std::span<Tensor> tensors) {
    std::vector<NodeRef> nodes;
    for (auto& t : tensors) nodes.push_back(t.node());
    if (tracing()) return;
    plan::resolve(nodes);
}

const Buffer& Tensor::buffer() const {
    node_of(node_);
    if (!node_->resolved()) {
        if (tracing())
            fail(
                "a compiled program's function read a tensor's data ({} {}) while being traced; "
                "expected it to compute tensors only (its data exists when the program runs)",
                name(dtype()), graph::to_string(shape()));
        plan::resolve({node_});
    }
    return *node_->buffer;
}

void Tensor::to_host_raw(void* data, DType dtype, size_t count) const {
    if (dtype != this->dtype())
        fail("to_host: the tensor holds {}; asked for {}", name(this->dtype()), name(dtype));
    const Buffer& b = buffer();
    if (count) b.download_raw(data, dtype, count);
}

std::vector<uint8_t> Tensor::to_host_bytes() const {
    const Buffer& b = buffer();
    return b.count() ? b.download_bytes() : std::vector<uint8_t>{};
}

Tensor Tensor::to(Device& device) const {
    if (&this->device() == &device) return *this;
    const std::vector<uint8_t> bytes = to_host_bytes();
    return from_bytes(bytes.data(), static_cast<size_t>(numel()), dtype(), shape(), device);
}

}  // namespace kiln
