// x[key] = value. kiln tensors are lazy values, so assignment does not write memory: the Tensor
// object x is rebound to a new value equal to the old one with the selected elements replaced
// (a where over the graph). Names bound to the same Python object see the change; other tensors,
// including views and results taken from x before, keep the old value. The key is read as
// x[key] reads it (index_key.hpp); value is a number, a Tensor of x's dtype and device, or host
// data, broadcast to x[key]'s shape. An index tensor is read to the host (so an index out of
// range is a kiln.Error here); a repeated index takes the last value given for it.
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

}  // namespace

Tensor setitem(const Tensor& x, nb::handle key, nb::handle value) {
    const Key k = parse_key(x, key);
    if (k.indices > 1)
        fail(
            "x[{}] = value: {} index tensors; an assignment takes one index tensor or a mask "
            "(x[key] reads through several)",
            k.text, k.indices);
    const Tensor v = value_tensor(x, value, k.text);
    if (&v.device() != &x.device())
        fail("x[{}] = value: value is on {} and x on {}; expected one device (move it with .to())",
             k.text, v.device().info().id, x.device().info().id);
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
