// kiln dtypes as DLPack element types and back, for numpy arrays and DLPack exchange.
#pragma once

#include <optional>
#include <string>

#include <nanobind/ndarray.h>

#include "kiln/dtype.hpp"

namespace kiln::python {

nanobind::dlpack::dtype dlpack_dtype(DType t);
// The kiln dtype of a DLPack element type; nothing when kiln has none (float64, complex, ...).
std::optional<DType> kiln_dtype(nanobind::dlpack::dtype t);
// "float64", "complex64", "int16", ... for messages.
std::string dlpack_dtype_name(nanobind::dlpack::dtype t);

}  // namespace kiln::python
