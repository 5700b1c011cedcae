// Cumulative sums and products (cumsum, cumprod) as a two-level blocked scan of masked folds:
// the axis is cut into blocks of about sqrt(n); each element is the fold of its block's prefix,
// combined with the fold of the blocks before it. Every fold is an ordinary reduction, so the
// bits are the oracle's on every device; the work is O(n^1.5) per row.
#include <cmath>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

enum class Scan { sum, prod };

Tensor fold_last(Scan kind, const Tensor& x) {
    const std::vector<int64_t> last{-1};
    return kind == Scan::sum ? sum(x, last) : prod(x, last);
}

Tensor combine(Scan kind, const Tensor& a, const Tensor& b) {
    return kind == Scan::sum ? a + b : a * b;
}

// Along the last axis of y [..., m]: element j folds y[..., p] for p <= j (inclusive) or p < j,
// the other elements replaced by the fold's identity (never multiplied by 0, so inf and NaN
// stay where they are).
Tensor masked_fold(Scan kind, const Tensor& y, bool inclusive) {
    const int64_t m = y.shape().back();
    const DType t = m < (int64_t{1} << 30) ? DType::i32 : DType::i64;
    const Tensor p = Tensor::arange(m, t, y.device()).reshape({1, m});
    const Tensor j = Tensor::arange(m, t, y.device()).reshape({m, 1});
    const Tensor mask = inclusive ? p <= j : p < j;
    const double identity = kind == Scan::sum ? 0 : 1;
    return fold_last(kind, where(mask, y.unsqueeze(-2), identity));
}

// The inclusive scan along the last axis of x [..., n].
Tensor scan_last(Scan kind, const Tensor& x) {
    const int64_t n = x.shape().back();
    const auto block = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
    const int64_t blocks = (n + block - 1) / block;
    std::vector<std::pair<int64_t, int64_t>> widths(x.rank(), {0, 0});
    widths.back().second = blocks * block - n;
    const Tensor padded = x.pad(widths, kind == Scan::sum ? 0 : 1);
    Shape grid(x.shape().begin(), x.shape().end() - 1);
    grid.push_back(blocks);
    grid.push_back(block);
    const Tensor inner = masked_fold(kind, padded.reshape(grid), true);  // [..., blocks, block]
    const Tensor totals = inner.slice(-1, block - 1, block).squeeze(-1);
    const Tensor before = masked_fold(kind, totals, false).unsqueeze(-1);
    Shape flat(x.shape());
    flat.back() = blocks * block;
    return combine(kind, inner, before).reshape(flat).slice(-1, 0, n);
}

Tensor scan(Scan kind, const Tensor& x, int64_t axis, const char* op) {
    if (kind == Scan::prod && x.dtype() == DType::boolean)
        fail("{}: dtype bool {}; expected a numeric dtype", op, graph::to_string(x.shape()));
    if (x.rank() == 0) {  // one element: axis 0 or -1, as torch
        graph::normalize_axis(axis, 1, op);
        return scan(kind, x.reshape({1}), 0, op).reshape({});
    }
    const int ax = graph::normalize_axis(axis, x.rank(), op);
    // An empty x has nothing to scan: the fold of each single element gives its dtype.
    if (x.numel() == 0) return fold_last(kind, x.unsqueeze(-1));
    const int last = static_cast<int>(x.rank()) - 1;
    const bool wide = is_half(x.dtype());
    const Tensor in = (wide ? cast(x, DType::f32) : x).transpose(ax, last);
    Tensor r = scan_last(kind, in).transpose(ax, last);
    return wide ? cast(r, x.dtype()) : r;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t axis) {
    return scan(Scan::sum, x, axis, "cumsum");
}

Tensor cumprod(const Tensor& x, int64_t axis) {
    return scan(Scan::prod, x, axis, "cumprod");
}

}  // namespace kiln
