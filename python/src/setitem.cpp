// x[key] = value. kiln tensors are lazy values, so assignment does not write memory: the Tensor
// object x is rebound to a new value equal to the old one with the selected elements replaced
// (a where over the graph). Names bound to the same Python object see the change; other tensors,
// including views and results taken from x before, keep the old value. The key is read as
// x[key] reads it (index_key.hpp); value is a number, a Tensor of x's dtype and device, or host
// data, broadcast to x[key]'s shape. An index tensor is read to the host (so an index out of
// range is a kiln.Error here); a repeated index takes the last value given for it.
#include <algorithm>

#include <fmt/format.h>

#include "bindings.hpp"
#include "index_key.hpp"
#include "kiln/error.hpp"

namespace kiln::python {
namespace {

std::string shape_text(const Shape& s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
}

// The value as a tensor of x's dtype on x's device.
Tensor value_tensor(const Tensor& x, nb::handle value, const std::string& key) {
    Tensor v;
    if (nb::try_cast<Tensor>(value, v)) {
        if (v.dtype() != x.dtype())
            fail("x[{}] = value: value is {} and x {}; expected x's dtype (convert with .to())",
                 key, name(v.dtype()), name(x.dtype()));
        return v;
    }
    nb::object tensor = nb::module_::import_("kiln").attr("tensor");
    return nb::cast<Tensor>(
        tensor(value, nb::cast(x.dtype()), nb::cast(&x.device(), nb::rv_policy::reference)));
}

// v seen with `shape` (numpy broadcasting), or a kiln::Error naming the key.
Tensor broadcast(const Tensor& v, const Shape& shape, const std::string& key) {
    const size_t r = shape.size();
    bool ok = v.rank() <= r;
    for (size_t d = 0; ok && d < v.rank(); ++d) {
        const int64_t e = v.shape()[v.rank() - 1 - d];
        ok = e == 1 || e == shape[r - 1 - d];
    }
    if (!ok)
        fail("x[{}] = value: value {} does not broadcast to the selection {}", key,
             shape_text(v.shape()), shape_text(shape));
    return v.expand(shape);
}

// x[mask] = value with the mask over x's leading axes.
Tensor assign_masked(const Tensor& x, const KeyItem& item, const Tensor& v,
                     const std::string& key) {
    const Tensor& mask = item.tensor;
    Shape widened = mask.shape();
    widened.resize(x.rank(), 1);
    const Tensor where_x = mask.reshape(widened).expand(x.shape());
    if (v.numel() == 1 && v.rank() <= x.rank() - mask.rank() + 1)
        return where(where_x, v.reshape(Shape(x.rank(), 1)).expand(x.shape()), x);
    // Each masked element's place among the selected ones.
    const std::vector<uint8_t> bits = mask.to_host_bytes();
    std::vector<int64_t> place(bits.size(), 0);
    int64_t count = 0;
    for (size_t i = 0; i < bits.size(); ++i)
        if (bits[i]) place[i] = count++;
    Shape selection{count};
    selection.insert(selection.end(), x.shape().begin() + static_cast<int64_t>(mask.rank()),
                     x.shape().end());
    const Tensor values = broadcast(v, selection, key);
    if (count == 0) return x;
    const Tensor at = Tensor::from_host(place, {mask.numel()}, x.device());
    return where(where_x, index_select(values, 0, at).reshape(x.shape()), x);
}

// The entries of index tensor `index` (for an axis of n) seen with shape b, on the host, each
// checked and counted from the start.
std::vector<int64_t> host_index(const Tensor& index, const Shape& b, int64_t n, int64_t axis,
                                const std::string& key) {
    const std::vector<int64_t> own = cast(index, DType::i64).to_host<int64_t>();
    for (size_t p = 0; p < own.size(); ++p)
        if (own[p] < -n || own[p] >= n)
            fail(
                "x[{}] = value: index {} at position {} is out of range for axis {} of {} elements",
                key, own[p], p, axis, n);
    // Broadcast: each position of b reads the index at its coordinates (1-extents repeat).
    const Shape& s = index.shape();
    int64_t count = 1;
    for (int64_t e : b) count *= e;
    std::vector<int64_t> out(static_cast<size_t>(count));
    for (int64_t flat = 0; flat < count; ++flat) {
        int64_t rest = flat, at = 0, stride = 1;
        for (size_t d = b.size(); d-- > 0;) {
            const int64_t c = rest % b[d];
            rest /= b[d];
            const size_t sd = d + s.size() - b.size();
            if (d + s.size() >= b.size()) {
                if (s[sd] != 1) at += c * stride;
                stride *= s[sd];
            }
        }
        const int64_t i = own[static_cast<size_t>(at)];
        out[static_cast<size_t>(flat)] = i < 0 ? i + n : i;
    }
    return out;
}

// x[i1, i2, ...] = value with several index tensors and whole axes otherwise: each position of
// the indices' broadcast shape picks one element of their axes (the last value given for an
// element wins), read on the host.
Tensor assign_several(const Tensor& x, nb::handle key, const Key& k, const Tensor& v) {
    std::vector<int64_t> axes, rest;
    std::vector<Tensor> indices;
    for (const KeyItem& item : k.items) {
        if (item.kind == KeyItem::Kind::index) {
            axes.push_back(item.axis);
            indices.push_back(item.tensor);
        } else if (item.kind != KeyItem::Kind::whole &&
                   !(item.kind == KeyItem::Kind::slice && item.start == 0 && item.step == 1 &&
                     item.count == x.size(item.axis))) {
            fail(
                "x[{}] = value: several index tensors with ints, slices or None; an assignment "
                "combines several index tensors only with whole axes (':')",
                k.text);
        }
    }
    for (int64_t a = 0; a < static_cast<int64_t>(x.rank()); ++a)
        if (std::find(axes.begin(), axes.end(), a) == axes.end()) rest.push_back(a);
    const Shape selection = getitem(x, key).shape();
    Tensor values = broadcast(v, selection, k.text);
    for (int64_t e : selection)
        if (e == 0) return x;
    // The selection is [before, B, after] (indices side by side) or [B, rest]: make it [B, rest].
    const int64_t b_rank = static_cast<int64_t>(selection.size() - rest.size());
    const Shape b(selection.begin() + (k.advanced_first ? 0 : axes.front()),
                  selection.begin() + (k.advanced_first ? 0 : axes.front()) + b_rank);
    if (!k.advanced_first) {
        std::vector<int64_t> order;
        for (int64_t a = 0; a < b_rank; ++a) order.push_back(axes.front() + a);
        for (int64_t a = 0; a < static_cast<int64_t>(selection.size()); ++a)
            if (a < axes.front() || a >= axes.front() + b_rank) order.push_back(a);
        values = values.permute(order);
    }
    int64_t positions = 1, extent = 1;
    for (int64_t e : b) positions *= e;
    for (int64_t a : axes) extent *= x.size(a);
    Shape rest_shape;
    for (int64_t a : rest) rest_shape.push_back(x.size(a));
    Shape flat_values{positions};
    flat_values.insert(flat_values.end(), rest_shape.begin(), rest_shape.end());
    values = values.reshape(flat_values);
    // Each element of the indices' axes: the position whose value it takes (-1: none).
    std::vector<int64_t> source(static_cast<size_t>(extent), -1);
    std::vector<int64_t> at(static_cast<size_t>(positions), 0);
    int64_t stride = 1;
    for (size_t j = axes.size(); j-- > 0;) {
        const int64_t n = x.size(axes[j]);
        const std::vector<int64_t> index = host_index(indices[j], b, n, axes[j], k.text);
        for (size_t p = 0; p < at.size(); ++p) at[p] += index[p] * stride;
        stride *= n;
    }
    for (size_t p = 0; p < at.size(); ++p)
        source[static_cast<size_t>(at[p])] = static_cast<int64_t>(p);
    std::vector<uint8_t> assigned(source.size());
    std::vector<int64_t> from(source.size());
    for (size_t c = 0; c < source.size(); ++c) {
        assigned[c] = source[c] >= 0;
        from[c] = source[c] < 0 ? 0 : source[c];
    }
    std::vector<int64_t> order(axes.begin(), axes.end());
    order.insert(order.end(), rest.begin(), rest.end());
    Shape flat_x{extent};
    flat_x.insert(flat_x.end(), rest_shape.begin(), rest_shape.end());
    const Tensor moved = x.permute(order).reshape(flat_x);
    Shape line(flat_x.size(), 1);
    line[0] = extent;
    const Tensor hit = Tensor::from_host(assigned, line, x.device()).to(DType::boolean);
    const Tensor placed = index_select(values, 0, Tensor::from_host(from, {extent}, x.device()));
    Tensor updated = where(hit.expand(flat_x), placed, moved);
    // Back to x's axes.
    Shape unflat;
    for (int64_t a : axes) unflat.push_back(x.size(a));
    unflat.insert(unflat.end(), rest_shape.begin(), rest_shape.end());
    std::vector<int64_t> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i)
        inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    return updated.reshape(unflat).permute(inverse);
}

}  // namespace

Tensor setitem(const Tensor& x, nb::handle key, nb::handle value) {
    const Key k = parse_key(x, key);
    const Tensor v = value_tensor(x, value, k.text);
    if (&v.device() != &x.device())
        fail("x[{}] = value: value is on {} and x on {}; expected one device (move it with .to())",
             k.text, v.device().info().id, x.device().info().id);
    if (k.indices > 1) return assign_several(x, key, k, v);
    if (k.advanced >= 0 && k.items[static_cast<size_t>(k.advanced)].kind == KeyItem::Kind::mask) {
        if (k.items.size() != x.rank() - k.items[size_t(k.advanced)].tensor.rank() + 1 ||
            k.advanced != 0)
            fail(
                "x[{}] = value: a mask with other items; expected the mask alone (x[mask] = "
                "value)",
                k.text);
        return assign_masked(x, k.items[0], v, k.text);
    }
    // The selection's shape, and the value in it.
    const Shape selection = getitem(x, key).shape();
    Tensor values = broadcast(v, selection, k.text);
    for (int64_t e : selection)
        if (e == 0) return x;
    // The value's axes in x's order: each index's axes where its axis is, None's axes last, an
    // int's axis restored with extent 1.
    std::vector<int64_t> order, index_axes, new_axes;
    int64_t at = 0;
    const size_t advanced = k.advanced < 0 ? 0 : static_cast<size_t>(k.advanced);
    const int64_t index_rank =
        k.advanced < 0 ? 0 : static_cast<int64_t>(k.items[advanced].tensor.rank());
    if (k.advanced_first)
        for (int64_t a = 0; a < index_rank; ++a) index_axes.push_back(at++);
    Shape kept;
    for (size_t n = 0; n < k.items.size(); ++n) {
        const KeyItem& item = k.items[n];
        switch (item.kind) {
            case KeyItem::Kind::newaxis:
                new_axes.push_back(at++);
                break;
            case KeyItem::Kind::index:
                if (!k.advanced_first)
                    for (int64_t a = 0; a < index_rank; ++a) index_axes.push_back(at++);
                order.insert(order.end(), index_axes.begin(), index_axes.end());
                kept.push_back(item.count);
                break;
            case KeyItem::Kind::integer:
                kept.push_back(1);
                break;
            default:
                order.push_back(at++);
                kept.push_back(item.count);
        }
    }
    order.insert(order.end(), new_axes.begin(), new_axes.end());
    values = values.permute(order).reshape(kept);
    // Per axis, each element's source in the value (-1: not assigned).
    Tensor hit;
    for (const KeyItem& item : k.items) {
        if (item.kind == KeyItem::Kind::whole || item.kind == KeyItem::Kind::newaxis) continue;
        const int64_t n = x.size(item.axis);
        std::vector<int64_t> source(static_cast<size_t>(n), -1);
        if (item.kind == KeyItem::Kind::index) {
            const std::vector<int64_t> index = cast(item.tensor, DType::i64).to_host<int64_t>();
            for (size_t p = 0; p < index.size(); ++p) {
                int64_t i = index[p];
                if (i < -n || i >= n)
                    fail(
                        "x[{}] = value: index {} at position {} is out of range for axis {} of "
                        "{} elements",
                        k.text, i, p, item.axis, n);
                source[static_cast<size_t>(i < 0 ? i + n : i)] = static_cast<int64_t>(p);
            }
        } else {
            for (int64_t p = 0; p < item.count; ++p)
                source[static_cast<size_t>(item.start + p * item.step)] = p;
        }
        std::vector<uint8_t> assigned(source.size());
        std::vector<int64_t> from(source.size());
        for (size_t c = 0; c < source.size(); ++c) {
            assigned[c] = source[c] >= 0;
            from[c] = source[c] < 0 ? 0 : source[c];
        }
        values = index_select(values, item.axis, Tensor::from_host(from, {n}, x.device()));
        Shape line(x.rank(), 1);
        line[static_cast<size_t>(item.axis)] = n;
        const Tensor on = Tensor::from_host(assigned, line, x.device()).to(DType::boolean);
        hit = hit.defined() ? (hit && on) : on;
    }
    if (!hit.defined()) return values.expand(x.shape());
    return where(hit.expand(x.shape()), values, x);
}

void bind_setitem(TensorClass& cls) {
    cls.def(
        "__setitem__",
        [](Tensor& x, nb::handle key, nb::handle value) { x = setitem(x, key, value); },
        "x[key] = value: x becomes a new lazy value, the old one with x[key] replaced by value "
        "(broadcast; x's dtype). Other tensors, views of x among them, keep the old value.");
}

}  // namespace kiln::python
