// A numpy array that owns a std::vector's values (freed with the array), for results computed on
// the host.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>

#include "bindings.hpp"

namespace kiln::python {

template <typename T>
nb::ndarray<nb::numpy, T> owned_numpy(std::vector<T> values, const std::vector<size_t>& shape) {
    auto* owned = new std::vector<T>(std::move(values));
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
    return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.data(), owner);
}

}  // namespace kiln::python
