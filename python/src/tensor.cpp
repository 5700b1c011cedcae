// kiln.Tensor itself: its properties, resolve(), item() (repr is python/kiln/_repr.py); and the
// argument helpers for shapes and axes that the other files use.
#include <string>

#include <fmt/format.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "kiln/error.hpp"
#include "kiln/semantics.hpp"

namespace kiln::python {
namespace {

std::string repr_of(nb::handle h) {
    return nb::cast<std::string>(nb::repr(h));
}

// One element's value as a Python number (bool, int or float), read from resolved bytes.
nb::object element(DType t, const uint8_t* p) {
    switch (t) {
        case DType::f32: {
            float v;
            std::memcpy(&v, p, 4);
            return nb::float_(v);
        }
        case DType::f16:
        case DType::bf16: {
            uint16_t bits;
            std::memcpy(&bits, p, 2);
            return nb::float_(t == DType::f16 ? semantics::f16_to_f32(bits)
                                              : semantics::bf16_to_f32(bits));
        }
        case DType::i8:
            return nb::int_(static_cast<int8_t>(*p));
        case DType::u8:
            return nb::int_(*p);
        case DType::i32: {
            int32_t v;
            std::memcpy(&v, p, 4);
            return nb::int_(v);
        }
        case DType::u32: {
            uint32_t v;
            std::memcpy(&v, p, 4);
            return nb::int_(v);
        }
        case DType::i64: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return nb::int_(v);
        }
        case DType::boolean:
            break;
    }
    return nb::bool_(*p != 0);
}

nb::object item(const Tensor& t) {
    if (t.numel() != 1)
        throw nb::value_error(fmt::format("item(): the tensor has {} elements (shape {}); expected "
                                          "exactly one",
                                          t.numel(), fmt::join(t.shape(), "x"))
                                  .c_str());
    std::vector<uint8_t> bytes;
    {
        nb::gil_scoped_release release;
        bytes = t.to_host_bytes();
    }
    return element(t.dtype(), bytes.data());
}

}  // namespace

int64_t to_int64(nb::handle h, const char* what) {
    nb::object index = nb::steal(PyNumber_Index(h.ptr()));
    if (!index.is_valid()) {
        PyErr_Clear();
        throw nb::type_error(fmt::format("{}: {} is not an int", what, repr_of(h)).c_str());
    }
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0)
        fail("{}: {} does not fit a 64-bit integer; expected -2**63 to 2**63 - 1", what,
             repr_of(h));
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        throw nb::type_error(fmt::format("{}: {} is not an int", what, repr_of(h)).c_str());
    }
    return value;
}

std::vector<int64_t> to_ints(nb::handle h, const char* what) {
    if (nb::isinstance<nb::int_>(h)) return {to_int64(h, what)};
    std::vector<int64_t> out;
    if (!nb::isinstance<nb::str>(h) && nb::hasattr(h, "__iter__")) {
        for (nb::handle item : h) {
            if (!nb::isinstance<nb::int_>(item) && !nb::hasattr(item, "__index__"))
                throw nb::type_error(fmt::format("{}: {} in {} is not an int; expected ints", what,
                                                 repr_of(item), repr_of(h))
                                         .c_str());
            out.push_back(to_int64(item, what));
        }
        return out;
    }
    if (nb::hasattr(h, "__index__")) return {to_int64(h, what)};
    throw nb::type_error(
        fmt::format("{}: {} is not an int or a sequence of ints", what, repr_of(h)).c_str());
}

std::vector<int64_t> to_axes(nb::handle h) {
    if (h.is_none()) return {};
    return to_ints(h, "axis");
}

void bind_tensor(nb::module_& m, TensorClass& cls) {
    cls.def_prop_ro("shape", [](const Tensor& t) { return nb::tuple(nb::cast(t.shape())); })
        .def_prop_ro("dtype", &Tensor::dtype)
        .def_prop_ro("device", &Tensor::device, nb::rv_policy::reference)
        .def_prop_ro("ndim", &Tensor::rank)
        .def_prop_ro("numel", &Tensor::numel, "The number of elements.")
        .def(
            "size",
            [](const Tensor& t, nb::handle axis) -> nb::object {
                if (axis.is_none()) return nb::tuple(nb::cast(t.shape()));
                return nb::int_(t.size(to_int64(axis, "size")));
            },
            nb::arg("axis") = nb::none())
        .def_prop_ro("resolved", &Tensor::resolved, "Whether the data is computed.")
        .def(
            "resolve",
            [](Tensor& t) -> Tensor& {
                nb::gil_scoped_release release;
                return t.resolve();
            },
            nb::rv_policy::reference_internal,
            "Computes the tensor now (with whatever it needs) and returns it.")
        .def("item", &item, "The value of a one-element tensor as a Python number.")
        .def("__bool__", [](const Tensor& t) { return nb::cast<bool>(nb::bool_(item(t))); })
        .def("__float__", [](const Tensor& t) { return nb::cast<double>(nb::float_(item(t))); })
        .def("__int__", [](const Tensor& t) { return nb::cast<int64_t>(nb::int_(item(t))); })
        .def("__len__", [](const Tensor& t) {
            if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
            return t.shape()[0];
        });
    cls.attr("__hash__") = nb::none();  // == builds a tensor
    m.def(
        "resolve",
        [](nb::args args) {
            // resolve(a, b) or resolve([a, b]) (a list or tuple as the one argument).
            nb::handle items = args;
            if (args.size() == 1 &&
                (nb::isinstance<nb::list>(args[0]) || nb::isinstance<nb::tuple>(args[0])))
                items = args[0];
            std::vector<Tensor> all;
            size_t i = 0;
            for (nb::handle h : items) {
                if (!nb::isinstance<Tensor>(h))
                    throw nb::type_error(
                        fmt::format("kiln.resolve: argument {} is {}; expected kiln.Tensor "
                                    "arguments or one list of them",
                                    i, nb::type_name(h.type()).c_str())
                            .c_str());
                all.push_back(nb::cast<Tensor>(h));
                ++i;
            }
            nb::gil_scoped_release release;
            kiln::resolve(all);
        },
        "Resolves several tensors in one plan (shared work is computed once): resolve(a, b) or "
        "resolve([a, b]).");
}

}  // namespace kiln::python
