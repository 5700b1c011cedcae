// kiln._kiln, the module behind `import kiln`: each part of the API is bound in its own file, and
// module.cpp binds them in order. The helpers here turn Python arguments (dtypes, devices, shapes,
// axes) into kiln's types, with a TypeError or ValueError naming what was expected otherwise.
#pragma once

#include <cstdint>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/tensor.hpp"

namespace kiln::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_dtypes(nb::module_& m);
void bind_devices(nb::module_& m);
using TensorClass = nb::class_<Tensor>;
void bind_tensor(nb::module_& m, TensorClass& cls);
void bind_creation(nb::module_& m);
void bind_operators(TensorClass& cls);
void bind_math(nb::module_& m, TensorClass& cls);
void bind_reductions(nb::module_& m, TensorClass& cls);
void bind_views(nb::module_& m, TensorClass& cls);
void bind_indexing(nb::module_& m, TensorClass& cls);
void bind_sorting(nb::module_& m, TensorClass& cls);
void bind_getitem(TensorClass& cls);
void bind_setitem(TensorClass& cls);
// x[key] (getitem.cpp), which x[key] = value also uses for its shape.
Tensor getitem(const Tensor& x, nb::handle key);
void bind_host_arrays(nb::module_& m, TensorClass& cls);
void bind_dlpack(nb::module_& m);
void bind_shipped_ops(nb::module_& m);
void bind_program(nb::module_& m);
void bind_gguf(nb::module_& m);

// A kiln.DType, a name ("f32", "float32", "bool", ...) or anything numpy.dtype() takes.
DType to_dtype(nb::handle h, const char* what);
// Whether `h` names a dtype to_dtype takes (a kiln.DType, a dtype name, a numpy dtype), rather
// than a device.
bool is_dtype(nb::handle h);
// None (the CPU), a kiln.Device, or a name find_device takes ("cpu", "opencl", "cuda", an id, an
// index).
Device& to_device(nb::handle h);
// An int or a sequence of ints.
// A Python int (or an object with __index__) as int64: kiln::Error naming `what` and the value
// when it does not fit, TypeError when it is not an int.
int64_t to_int64(nb::handle h, const char* what);
std::vector<int64_t> to_ints(nb::handle h, const char* what);
// None (every axis), an int or a sequence of ints.
std::vector<int64_t> to_axes(nb::handle h);

}  // namespace kiln::python
