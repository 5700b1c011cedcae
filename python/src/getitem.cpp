// x[key] (numpy's rules): ints pick (the axis goes), slices narrow (a negative step reverses,
// by a gather), None inserts an axis of 1, Ellipsis stands for the axes not named; an index
// tensor (i8 to i64, or a list of ints; negative entries count from the end) gathers along its
// axis, its axes taking that axis's place; several index tensors are broadcast together and pick
// one element of their axes per position (one gather over those axes flattened); one bool mask
// selects along the axes it covers (resolving the mask: its count sets the shape).

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bindings.hpp"
#include "index_key.hpp"
#include "kiln/error.hpp"

namespace kiln::python {
namespace {

// out with axes [from, from + count) moved to the front.
Tensor to_front(const Tensor& out, int64_t from, int64_t count) {
    std::vector<int64_t> order;
    for (int64_t a = from; a < from + count; ++a) order.push_back(a);
    for (int64_t a = 0; a < static_cast<int64_t>(out.rank()); ++a)
        if (a < from || a >= from + count) order.push_back(a);
    return out.permute(order);
}

// The index tensors' shapes broadcast together (numpy's rule), or a kiln::Error naming the key.
Shape broadcast_shapes(const std::vector<Tensor>& indices, const std::string& key) {
    Shape out;
    for (const Tensor& t : indices) {
        const Shape& s = t.shape();
        if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
        for (size_t d = 0; d < s.size(); ++d) {
            int64_t& o = out[out.size() - s.size() + d];
            if (s[d] == o || s[d] == 1) continue;
            if (o != 1) {
                std::vector<std::string> shapes;
                for (const Tensor& i : indices) shapes.push_back(fmt::format("{}", i.shape()));
                fail("x[{}]: index tensors of shapes {} do not broadcast together", key,
                     fmt::join(shapes, ", "));
            }
            o = s[d];
        }
    }
    return out;
}

// Several index tensors (at axes `axes` of out, ascending): each entry of their broadcast shape B
// picks out[..., i1, ..., i2, ...]. Each index is checked against its own axis (a gather from
// arange), so an entry out of range is an error rather than another axis's element; then one
// gather of the flat position over those axes, moved to the front. Returns B's axes first, then
// out's other axes in order.
Tensor gather_several(const Tensor& out, const std::vector<int64_t>& axes,
                      const std::vector<Tensor>& indices, const std::string& key) {
    const Shape b = broadcast_shapes(indices, key);
    Device& d = out.device();
    Tensor flat;
    int64_t stride = 1, extent = 1;
    for (size_t j = axes.size(); j-- > 0;) {
        const int64_t n = out.size(axes[j]);
        const Tensor i = index_for_axis(indices[j].flatten(), n);
        const Tensor checked = index_select(Tensor::arange(n, DType::i64, d), 0, i);
        const Tensor term =
            checked.reshape(indices[j].shape()).expand(b) * static_cast<double>(stride);
        flat = flat.defined() ? term + flat : term;
        stride *= n;
        extent *= n;
    }
    std::vector<int64_t> order(axes.begin(), axes.end());
    Shape rest;
    for (int64_t a = 0; a < static_cast<int64_t>(out.rank()); ++a)
        if (std::find(axes.begin(), axes.end(), a) == axes.end()) {
            order.push_back(a);
            rest.push_back(out.size(a));
        }
    Shape front{extent};
    front.insert(front.end(), rest.begin(), rest.end());
    const Tensor picked = index_select(out.permute(order).reshape(front), 0, flat.flatten());
    Shape shape = b;
    shape.insert(shape.end(), rest.begin(), rest.end());
    return picked.reshape(shape);
}

}  // namespace

Tensor getitem(const Tensor& x, nb::handle key) {
    const Key k = parse_key(x, key);
    Tensor out = x;
    int64_t axis = 0;  // the axis of `out` the next item applies to
    int64_t advanced_axis = 0, advanced_rank = 0;
    std::vector<int64_t> index_axes;  // several index tensors: their axes of `out`, gathered last
    std::vector<Tensor> indices;
    for (const KeyItem& item : k.items) {
        switch (item.kind) {
            case KeyItem::Kind::whole:
                ++axis;
                break;
            case KeyItem::Kind::newaxis:
                out = out.unsqueeze(axis++);
                break;
            case KeyItem::Kind::integer:
                out = out.slice(axis, item.start, item.start + 1).squeeze(axis);
                break;
            case KeyItem::Kind::slice:
                if (item.step > 0) {
                    out =
                        out.slice(axis, item.start, item.start + item.count * item.step, item.step);
                } else {
                    std::vector<int64_t> at(static_cast<size_t>(item.count));
                    for (int64_t i = 0; i < item.count; ++i)
                        at[static_cast<size_t>(i)] = item.start + i * item.step;
                    out = index_select(out, axis, Tensor::from_host(at, {item.count}, x.device()));
                }
                ++axis;
                break;
            case KeyItem::Kind::index: {
                if (k.indices > 1) {
                    index_axes.push_back(axis++);
                    indices.push_back(item.tensor);
                    break;
                }
                const Tensor& index = item.tensor;
                const Tensor i =
                    index_for_axis(index.rank() == 1 ? index : index.flatten(), out.size(axis));
                out = index_select(out, axis, i);
                Shape shape = out.shape();
                shape.erase(shape.begin() + axis);
                shape.insert(shape.begin() + axis, index.shape().begin(), index.shape().end());
                out = out.reshape(shape);
                advanced_axis = axis;
                advanced_rank = static_cast<int64_t>(index.rank());
                axis += advanced_rank;
                break;
            }
            case KeyItem::Kind::mask: {
                const auto r = static_cast<int64_t>(item.tensor.rank());
                const Tensor picked = boolean_mask(to_front(out, axis, r), item.tensor);
                std::vector<int64_t> order;  // the selection's axis back to `axis`
                for (int64_t a = 1; a <= axis; ++a) order.push_back(a);
                order.push_back(0);
                for (int64_t a = axis + 1; a < static_cast<int64_t>(picked.rank()); ++a)
                    order.push_back(a);
                out = picked.permute(order);
                advanced_axis = axis;
                advanced_rank = 1;
                ++axis;
                break;
            }
        }
    }
    if (!indices.empty()) {
        // B's axes come first; unless numpy's rule keeps them there, they move back to where the
        // first index was.
        const auto others = static_cast<int64_t>(out.rank() - index_axes.size());
        out = gather_several(out, index_axes, indices, k.text);
        const int64_t b_rank = static_cast<int64_t>(out.rank()) - others;
        if (k.advanced_first) return out;
        std::vector<int64_t> order;
        for (int64_t a = 0; a < index_axes.front(); ++a) order.push_back(b_rank + a);
        for (int64_t a = 0; a < b_rank; ++a) order.push_back(a);
        for (int64_t a = b_rank + index_axes.front(); a < b_rank + others; ++a) order.push_back(a);
        return out.permute(order);
    }
    if (k.advanced_first) out = to_front(out, advanced_axis, advanced_rank);
    return out;
}

void bind_getitem(TensorClass& cls) {
    cls.def("__getitem__", &getitem,
            "x[key] as numpy: ints, slices (any step), None, ..., integer index tensors (or lists "
            "of ints; several are broadcast together) or one bool mask (resolved: its count "
            "sets the shape).");
}

}  // namespace kiln::python
