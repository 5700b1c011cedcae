// Indexing ops: index_select, gather, embedding, scatter_add and boolean_mask.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

using graph::NodeRef;

namespace {

void require_index(const Tensor& index, const char* op) {
    if (index.dtype() != DType::i32 && index.dtype() != DType::u32 && index.dtype() != DType::i64)
        fail("{}: index is {} {}; expected i32, u32 or i64", op, name(index.dtype()),
             graph::to_string(index.shape()));
}

// index's extents must not exceed x's off `axis` (torch.gather and scatter_add's rule).
void require_within(const Tensor& index, const Tensor& x, int axis, const char* op,
                    const char* what) {
    if (index.rank() != x.rank())
        fail("{}: index {} has rank {}; expected the rank of {} {}", op,
             graph::to_string(index.shape()), index.rank(), what, graph::to_string(x.shape()));
    for (size_t d = 0; d < x.rank(); ++d)
        if (static_cast<int>(d) != axis && index.shape()[d] > x.shape()[d])
            fail("{}: index {} is longer than {} {} on axis {}", op,
                 graph::to_string(index.shape()), what, graph::to_string(x.shape()), d);
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
    require_index(index, "index_select");
    graph::common_device({x.node().get(), index.node().get()}, "index_select");
    if (index.rank() != 1)
        fail("index_select: index is {}; expected one axis", graph::to_string(index.shape()));
    const int ax = graph::normalize_axis(axis, x.rank(), "index_select");
    if (x.shape()[static_cast<size_t>(ax)] == 0 && index.numel() > 0)
        fail("index_select: axis {} of {} is empty", axis, graph::to_string(x.shape()));
    Shape shape = x.shape();
    shape[static_cast<size_t>(ax)] = index.shape()[0];
    graph::checked_element_count(shape, "index_select");
    return Tensor(graph::make_node(graph::op::Gather{ax, true}, x.dtype(), shape,
                                   {x.node(), index.node()}, &x.device()));
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
    require_index(index, "gather");
    graph::common_device({x.node().get(), index.node().get()}, "gather");
    const int ax = graph::normalize_axis(axis, x.rank(), "gather");
    require_within(index, x, ax, "gather", "x");
    if (x.shape()[static_cast<size_t>(ax)] == 0 && index.numel() > 0)
        fail("gather: axis {} of {} is empty", axis, graph::to_string(x.shape()));
    return Tensor(graph::make_node(graph::op::Gather{ax, false}, x.dtype(), index.shape(),
                                   {x.node(), index.node()}, &x.device()));
}

Tensor embedding(const Tensor& table, const Tensor& ids) {
    if (table.rank() != 2)
        fail("embedding: table is {}; expected [vocabulary, dim]", graph::to_string(table.shape()));
    Shape shape = ids.shape();
    shape.push_back(table.shape()[1]);
    Tensor rows = index_select(table, 0, ids.rank() == 1 ? ids : ids.flatten());
    return rows.reshape(shape);
}

Tensor scatter_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src) {
    require_index(index, "scatter_add");
    graph::common_device({base.node().get(), index.node().get(), src.node().get()}, "scatter_add");
    if (src.dtype() != base.dtype())
        fail("scatter_add: src is {} and base {}; expected one dtype", name(src.dtype()),
             name(base.dtype()));
    if (base.dtype() == DType::boolean) fail("scatter_add: bool tensors cannot be added");
    if (index.shape() != src.shape())
        fail("scatter_add: index {} and src {} differ; expected one shape",
             graph::to_string(index.shape()), graph::to_string(src.shape()));
    const int ax = graph::normalize_axis(axis, base.rank(), "scatter_add");
    require_within(index, base, ax, "scatter_add", "base");
    return Tensor(graph::make_node(graph::op::ScatterAdd{ax}, base.dtype(), base.shape(),
                                   {base.node(), index.node(), src.node()}, &base.device()));
}

Tensor boolean_mask(const Tensor& x, const Tensor& mask) {
    graph::common_device({x.node().get(), mask.node().get()}, "boolean_mask");
    if (mask.dtype() != DType::boolean)
        fail("boolean_mask: mask is {} {}; expected bool", name(mask.dtype()),
             graph::to_string(mask.shape()));
    const Shape& xs = x.shape();
    const Shape& ms = mask.shape();
    if (ms.size() > xs.size() || !std::equal(ms.begin(), ms.end(), xs.begin()))
        fail("boolean_mask: mask {} does not match x {}; expected the leading extents of x",
             graph::to_string(ms), graph::to_string(xs));
    Shape rows{mask.numel()};
    rows.insert(rows.end(), xs.begin() + static_cast<int64_t>(ms.size()), xs.end());
    const std::vector<uint8_t> bits = mask.to_host_bytes();
    std::vector<int64_t> positions;
    for (size_t i = 0; i < bits.size(); ++i)
        if (bits[i]) positions.push_back(static_cast<int64_t>(i));
    const auto count = static_cast<int64_t>(positions.size());
    const Tensor index = Tensor::from_host(positions, {count}, x.device());
    return index_select(x.reshape(rows), 0, index);
}

}  // namespace kiln
