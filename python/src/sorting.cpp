// sort, argsort and topk (kiln.f(x, ...) and x.f(...)): stable, NaN as the largest value, i32
// indices; (values, indices) tuples for sort and topk, as torch.
#include <nanobind/stl/pair.h>

#include "bindings.hpp"

namespace kiln::python {

void bind_sorting(nb::module_& m, TensorClass& cls) {
    using nb::arg;
    const auto sort_fn = [](const Tensor& x, int64_t axis, bool descending) {
        Sorted s = sort(x, axis, descending);
        return std::pair{s.values, s.indices};
    };
    const char* sort_doc =
        "(values, indices) sorted along axis (torch.sort): stable (equal values keep their index "
        "order; -0.0 equals +0.0), NaN counted as the largest value (last ascending, first "
        "descending); i32 indices. O(n^2) comparisons per row: rows up to a few thousand.";
    m.def("sort", sort_fn, arg("x"), arg("axis") = -1, arg("descending") = false, sort_doc);
    cls.def("sort", sort_fn, arg("axis") = -1, arg("descending") = false, sort_doc);
    const auto argsort_fn = [](const Tensor& x, int64_t axis, bool descending) {
        return argsort(x, axis, descending);
    };
    const char* argsort_doc = "The i32 indices that sort x along axis (sort's order).";
    m.def("argsort", argsort_fn, arg("x"), arg("axis") = -1, arg("descending") = false,
          argsort_doc);
    cls.def("argsort", argsort_fn, arg("axis") = -1, arg("descending") = false, argsort_doc);
    const auto topk_fn = [](const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted) {
        Sorted s = topk(x, k, axis, largest, sorted);
        return std::pair{s.values, s.indices};
    };
    const char* topk_doc =
        "(values, indices) of the k largest (largest=False: smallest) along axis, in sort's "
        "order (torch.topk; always sorted). kiln.Error unless 0 <= k <= the axis's extent.";
    m.def("topk", topk_fn, arg("x"), arg("k"), arg("axis") = -1, arg("largest") = true,
          arg("sorted") = true, topk_doc);
    cls.def("topk", topk_fn, arg("k"), arg("axis") = -1, arg("largest") = true,
            arg("sorted") = true, topk_doc);
    m.def("boolean_mask", &boolean_mask, arg("x"), arg("mask"),
          "x[mask] (numpy): mask is bool with x's leading extents; the selected elements (or "
          "rows) in row-major order along a new first axis. Resolves mask (its count sets the "
          "shape).");
}

}  // namespace kiln::python
