// Views (index maps, never copies): reshape, permute, transpose, expand, slice, pad, squeeze,
// unsqueeze and flatten (x[...] is getitem.cpp's).
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
        .def("flatten", &Tensor::flatten, "The elements as one axis.");
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
