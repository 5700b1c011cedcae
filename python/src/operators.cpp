// Python operators on kiln.Tensor: arithmetic (+ - * / // % with reflected forms and Python
// numbers, which take the tensor's dtype), comparisons giving bool tensors, & | ~ on bool tensors,
// @, **.
#include <nanobind/operators.h>

#include "bindings.hpp"

namespace kiln::python {

void bind_operators(TensorClass& cls) {
    using T = const Tensor&;
    cls.def(
           "__add__", [](T a, T b) { return a + b; }, nb::is_operator())
        .def(
            "__add__", [](T a, double b) { return a + b; }, nb::is_operator())
        .def(
            "__radd__", [](T a, double b) { return b + a; }, nb::is_operator())
        .def(
            "__sub__", [](T a, T b) { return a - b; }, nb::is_operator())
        .def(
            "__sub__", [](T a, double b) { return a - b; }, nb::is_operator())
        .def(
            "__rsub__", [](T a, double b) { return b - a; }, nb::is_operator())
        .def(
            "__mul__", [](T a, T b) { return a * b; }, nb::is_operator())
        .def(
            "__mul__", [](T a, double b) { return a * b; }, nb::is_operator())
        .def(
            "__rmul__", [](T a, double b) { return b * a; }, nb::is_operator())
        .def(
            "__truediv__", [](T a, T b) { return a / b; }, nb::is_operator())
        .def(
            "__truediv__", [](T a, double b) { return a / b; }, nb::is_operator())
        .def(
            "__rtruediv__", [](T a, double b) { return b / a; }, nb::is_operator())
        .def(
            "__floordiv__", [](T a, T b) { return floor_divide(a, b); }, nb::is_operator())
        .def(
            "__floordiv__", [](T a, double b) { return floor_divide(a, b); }, nb::is_operator())
        .def(
            "__rfloordiv__", [](T a, double b) { return floor_divide(b, a); }, nb::is_operator())
        .def(
            "__mod__", [](T a, T b) { return a % b; }, nb::is_operator())
        .def(
            "__mod__", [](T a, double b) { return a % b; }, nb::is_operator())
        .def(
            "__rmod__", [](T a, double b) { return b % a; }, nb::is_operator())
        .def(
            "__pow__", [](T a, T b) { return pow(a, b); }, nb::is_operator())
        .def(
            "__pow__", [](T a, double b) { return pow(a, b); }, nb::is_operator())
        .def(
            "__rpow__",
            [](T a, double b) { return pow(Tensor::full(a.shape(), b, a.dtype(), a.device()), a); },
            nb::is_operator())
        .def(
            "__matmul__", [](T a, T b) { return matmul(a, b); }, nb::is_operator())
        .def("__neg__", [](T a) { return -a; })
        .def("__pos__", [](T a) { return a; })
        .def("__abs__", [](T a) { return abs(a); })
        .def(
            "__invert__", [](T a) { return !a; }, "Logical not of a bool tensor.")
        .def(
            "__and__", [](T a, T b) { return a && b; }, nb::is_operator())
        .def(
            "__or__", [](T a, T b) { return a || b; }, nb::is_operator())
        .def(
            "__eq__", [](T a, T b) { return a == b; }, nb::is_operator())
        .def(
            "__eq__", [](T a, double b) { return a == b; }, nb::is_operator())
        .def(
            "__ne__", [](T a, T b) { return a != b; }, nb::is_operator())
        .def(
            "__ne__", [](T a, double b) { return a != b; }, nb::is_operator())
        .def(
            "__lt__", [](T a, T b) { return a < b; }, nb::is_operator())
        .def(
            "__lt__", [](T a, double b) { return a < b; }, nb::is_operator())
        .def(
            "__le__", [](T a, T b) { return a <= b; }, nb::is_operator())
        .def(
            "__le__", [](T a, double b) { return a <= b; }, nb::is_operator())
        .def(
            "__gt__", [](T a, T b) { return a > b; }, nb::is_operator())
        .def(
            "__gt__", [](T a, double b) { return a > b; }, nb::is_operator())
        .def(
            "__ge__", [](T a, T b) { return a >= b; }, nb::is_operator())
        .def(
            "__ge__", [](T a, double b) { return a >= b; }, nb::is_operator());
}

}  // namespace kiln::python
