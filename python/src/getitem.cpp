// x[key] (numpy's rules): ints pick (the axis goes), slices narrow (a negative step reverses,
// by a gather), None inserts an axis of 1, Ellipsis stands for the axes not named; one index
// tensor (i8 to i64, or a list of ints; negative entries count from the end) gathers along its
// axis, its axes taking that axis's place; one bool mask selects along the axes it covers
// (resolving the mask: its count sets the shape).

#include "bindings.hpp"
#include "index_key.hpp"

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

}  // namespace

Tensor getitem(const Tensor& x, nb::handle key) {
    const Key k = parse_key(x, key);
    Tensor out = x;
    int64_t axis = 0;  // the axis of `out` the next item applies to
    int64_t advanced_axis = 0, advanced_rank = 0;
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
    if (k.advanced_first) out = to_front(out, advanced_axis, advanced_rank);
    return out;
}

void bind_getitem(TensorClass& cls) {
    cls.def("__getitem__", &getitem,
            "x[key] as numpy: ints, slices (any step), None, ..., one integer index tensor (or "
            "list of ints) and one bool mask (resolved: its count sets the shape).");
}

}  // namespace kiln::python
