// Views (index maps, never copies): reshape, permute, transpose, expand, slice, pad, squeeze,
// unsqueeze, flatten, and x[...] with ints, slices (step >= 1), None and Ellipsis.
#include <string>

#include <fmt/format.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"

namespace kiln::python {
namespace {

// reshape(2, 3) and reshape((2, 3)) alike.
std::vector<int64_t> shape_args(const nb::args& args, const char* what) {
    if (args.size() == 1) return to_ints(args[0], what);
    return to_ints(args, what);
}

// x[key]: each int picks an index (the axis goes), each slice narrows its axis, None inserts an
// axis of 1, Ellipsis stands for the axes no other item names.
Tensor getitem(const Tensor& x, nb::handle key) {
    std::vector<nb::handle> items;
    if (nb::isinstance<nb::tuple>(key))
        for (nb::handle h : key) items.push_back(h);
    else
        items.push_back(key);
    size_t named = 0;
    bool ellipsis = false;
    for (nb::handle h : items) {
        if (h.is(nb::ellipsis())) {
            if (ellipsis) throw nb::index_error("an index can only have one ellipsis ('...')");
            ellipsis = true;
        } else if (!h.is_none()) {
            ++named;
        }
    }
    if (named > x.rank())
        throw nb::index_error(
            fmt::format("too many indices: {} for a tensor of {} axes", named, x.rank()).c_str());
    Tensor out = x;
    int64_t axis = 0;  // the axis of `out` the next item applies to
    for (nb::handle h : items) {
        if (h.is(nb::ellipsis())) {
            axis += static_cast<int64_t>(x.rank() - named);
        } else if (h.is_none()) {
            out = out.unsqueeze(axis);
            ++axis;
        } else if (nb::isinstance<nb::slice>(h)) {
            const int64_t length = out.size(axis);
            auto [start, stop, step, count] = nb::borrow<nb::slice>(h).compute(length);
            if (step < 1)
                throw nb::value_error(
                    fmt::format("x[{}]: a slice step of {}; expected a step >= 1 (kiln's views "
                                "do not reverse)",
                                nb::cast<std::string>(nb::repr(key)), step)
                        .c_str());
            (void)count;
            out = out.slice(axis, static_cast<int64_t>(start), std::max<int64_t>(stop, start),
                            static_cast<int64_t>(step));
            ++axis;
        } else if (nb::isinstance<nb::int_>(h) || nb::hasattr(h, "__index__")) {
            const int64_t length = out.size(axis);
            int64_t i = to_int64(h, "index");
            if (i < -length || i >= length)
                throw nb::index_error(fmt::format("index {} is out of range for axis {} of "
                                                  "extent {}",
                                                  i, axis, length)
                                          .c_str());
            if (i < 0) i += length;
            out = out.slice(axis, i, i + 1).squeeze(axis);
        } else {
            throw nb::type_error(
                fmt::format("x[{}]: {} is not an index; expected ints, slices, None or ...",
                            nb::cast<std::string>(nb::repr(key)),
                            nb::cast<std::string>(nb::repr(h)))
                    .c_str());
        }
    }
    return out;
}

}  // namespace

void bind_views(nb::module_& m, TensorClass& cls) {
    using nb::arg;
    cls.def(
           "reshape",
           [](const Tensor& x, nb::args shape) { return x.reshape(shape_args(shape, "reshape")); },
           "The same elements in another shape (one extent may be -1); reshape(2, 3) or "
           "reshape((2, 3)).")
        .def(
            "view",
            [](const Tensor& x, nb::args shape) { return x.reshape(shape_args(shape, "view")); },
            "reshape.")
        .def(
            "permute",
            [](const Tensor& x, nb::args order) { return x.permute(shape_args(order, "permute")); },
            "Axes reordered: out axis i is x's axis order[i].")
        .def("transpose", &Tensor::transpose, arg("a"), arg("b"), "Axes a and b swapped.")
        .def_prop_ro(
            "T",
            [](const Tensor& x) {
                if (x.rank() < 2) return x;
                return x.transpose(-2, -1);
            },
            "The last two axes swapped (a 0-d or 1-d tensor as it is).")
        .def(
            "expand",
            [](const Tensor& x, nb::args shape) { return x.expand(shape_args(shape, "expand")); },
            "numpy broadcasting to shape.")
        .def(
            "broadcast_to",
            [](const Tensor& x, nb::handle shape) {
                return x.expand(to_ints(shape, "broadcast_to"));
            },
            arg("shape"), "numpy broadcasting to shape.")
        .def("slice", &Tensor::slice, arg("axis"), arg("start"), arg("stop"), arg("step") = 1,
             "Elements start, start+step, ... below stop along axis (Python's clamping).")
        .def("pad", &Tensor::pad, arg("widths"), arg("value") = 0.0,
             "(before, after) elements of value around each axis: one pair per axis.")
        .def("squeeze", &Tensor::squeeze, arg("axis"), "Removes an axis of extent 1.")
        .def("unsqueeze", &Tensor::unsqueeze, arg("axis"), "Inserts an axis of extent 1.")
        .def("flatten", &Tensor::flatten, "The elements as one axis.")
        .def("__getitem__", &getitem);
    m.def(
        "reshape",
        [](const Tensor& x, nb::handle shape) { return x.reshape(to_ints(shape, "reshape")); },
        arg("x"), arg("shape"));
    m.def(
        "permute",
        [](const Tensor& x, nb::handle order) { return x.permute(to_ints(order, "permute")); },
        arg("x"), arg("order"));
    m.def("transpose", &Tensor::transpose, arg("x"), arg("a"), arg("b"));
    m.def(
        "broadcast_to",
        [](const Tensor& x, nb::handle shape) { return x.expand(to_ints(shape, "broadcast_to")); },
        arg("x"), arg("shape"));
    m.def("pad", &Tensor::pad, arg("x"), arg("widths"), arg("value") = 0.0);
    m.def("squeeze", &Tensor::squeeze, arg("x"), arg("axis"));
    m.def("unsqueeze", &Tensor::unsqueeze, arg("x"), arg("axis"));
    m.def("flatten", &Tensor::flatten, arg("x"));
}

}  // namespace kiln::python
