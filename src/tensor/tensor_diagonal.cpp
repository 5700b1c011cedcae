// Ops built on a matrix's row and column indices: eye, tril, triu and one_hot. Each compares
// generated indices (arange) and selects by the result, so nothing is special-cased per device.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

enum class Side { on, below, above };

// For an n x m grid, the bool [n, m] mask of column - row == k (on), <= k (below) or >= k
// (above). k is first clamped to [-n, m], where every comparison already has its answer, so the
// indices' arithmetic stays within i32 for any matrix under 2^30 a side.
Tensor diagonal_mask(int64_t n, int64_t m, int64_t k, Side side, Device& d) {
    k = std::clamp(k, -n, m);
    const DType t = std::max(n, m) < (int64_t{1} << 30) ? DType::i32 : DType::i64;
    Tensor offset =
        Tensor::arange(m, t, d).reshape({1, m}) - Tensor::arange(n, t, d).reshape({n, 1});
    const double kd = static_cast<double>(k);
    return side == Side::on ? offset == kd : side == Side::below ? offset <= kd : offset >= kd;
}

Tensor triangle(const Tensor& x, int64_t diagonal, Side side, const char* op) {
    if (x.rank() < 2)
        fail("{}: x is {}; expected at least two axes (a matrix or a batch of them)", op,
             graph::to_string(x.shape()));
    const Tensor keep = diagonal_mask(x.size(-2), x.size(-1), diagonal, side, x.device());
    return where(keep, x, 0.0);
}

}  // namespace

Tensor Tensor::eye(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype, Device& d) {
    const int64_t cols = m.value_or(n);
    if (n < 0 || cols < 0) fail("eye: {} rows and {} columns; expected sizes >= 0", n, cols);
    graph::checked_element_count({n, cols}, "eye");
    return cast(diagonal_mask(n, cols, k, Side::on, d), dtype);
}

Tensor tril(const Tensor& x, int64_t diagonal) {
    return triangle(x, diagonal, Side::below, "tril");
}

Tensor triu(const Tensor& x, int64_t diagonal) {
    return triangle(x, diagonal, Side::above, "triu");
}

// index == class along a new last axis, the index first read through index_select of the
// classes, which checks each one against num_classes when the result is resolved.
Tensor one_hot(const Tensor& index, int64_t num_classes, DType dtype) {
    if (index.dtype() != DType::i32 && index.dtype() != DType::u32 && index.dtype() != DType::i64)
        fail("one_hot: index is {} {}; expected i32, u32 or i64", name(index.dtype()),
             graph::to_string(index.shape()));
    if (num_classes < 1) fail("one_hot: num_classes {}; expected at least 1", num_classes);
    Shape shape = index.shape();
    shape.push_back(num_classes);
    graph::checked_element_count(shape, "one_hot");
    const DType t = num_classes <= INT32_MAX ? DType::i32 : DType::i64;
    const Tensor classes = Tensor::arange(num_classes, t, index.device());
    const Tensor checked = index_select(classes, 0, index.flatten()).reshape(index.shape());
    return cast(checked.unsqueeze(-1) == classes, dtype);
}

}  // namespace kiln
