// sort, argsort and topk along one axis, by counting: each element's rank is the number of
// elements of its row that sort before it (a comparison fold over the row, O(n^2) per row), and
// a scatter by rank writes each element's index at its place. Every step is an ordinary graph
// op, so the order is the oracle's on every device. The order is total and stable: NaN counts
// as the largest value (last ascending, first descending), equal values (-0.0 == +0.0 among
// them) keep their index order.
#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

// p < q in the order sort uses: NaN above every number (floats), bool as 0 < 1.
Tensor less(const Tensor& p, const Tensor& q) {
    if (!is_float(p.dtype())) return p < q;
    return (p < q) || (isnan(q) && !isnan(p));
}

// For x [..., n]: the index of each element's place in the sorted row, i32 [..., n].
Tensor ranks(const Tensor& x, bool descending) {
    const int64_t n = x.shape().back();
    const Tensor in = x.dtype() == DType::boolean ? cast(x, DType::u8) : x;
    const Tensor mine = in.unsqueeze(-1);   // [..., n, 1]: the element ranked (i)
    const Tensor other = in.unsqueeze(-2);  // [..., 1, n]: the one compared with it (j)
    const Tensor i = Tensor::arange(n, DType::i32, x.device()).reshape({n, 1});
    const Tensor j = Tensor::arange(n, DType::i32, x.device()).reshape({1, n});
    // j sorts before i when it is strictly before, or, earlier in the row, not strictly after.
    const Tensor a = descending ? mine : other, b = descending ? other : mine;
    const Tensor before = where(j < i, !less(b, a), less(a, b));
    return sum(before, {-1});
}

// The sorted positions of x [..., n] along its last axis: out[..., r] is the index of the
// element of rank r (i32).
Tensor order_last(const Tensor& x, bool descending) {
    const Tensor rank = ranks(x, descending);
    const int64_t n = x.shape().back();
    const Tensor positions = Tensor::arange(n, DType::i32, x.device()).expand(x.shape());
    return scatter_add(Tensor::zeros(x.shape(), DType::i32, x.device()), -1, rank, positions);
}

// The indices that sort x along `axis`, i32 of x's shape.
Tensor order(const Tensor& x, int64_t axis, bool descending, const char* op) {
    if (x.rank() == 0) {  // one element: axis 0 or -1, as torch
        graph::normalize_axis(axis, 1, op);
        return Tensor::zeros({}, DType::i32, x.device());
    }
    const int ax = graph::normalize_axis(axis, x.rank(), op);
    const int64_t n = x.shape()[static_cast<size_t>(ax)];
    if (n > int64_t{1} << 31)
        fail("{}: axis {} of {} has {} elements; expected at most 2^31", op, axis,
             graph::to_string(x.shape()), n);
    if (x.numel() == 0) return Tensor::zeros(x.shape(), DType::i32, x.device());
    const int last = static_cast<int>(x.rank()) - 1;
    return order_last(x.transpose(ax, last), descending).transpose(ax, last);
}

}  // namespace

Sorted sort(const Tensor& x, int64_t axis, bool descending) {
    Tensor indices = order(x, axis, descending, "sort");
    if (x.rank() == 0) return {x, indices};
    return {gather(x, axis, indices), indices};
}

Tensor argsort(const Tensor& x, int64_t axis, bool descending) {
    return order(x, axis, descending, "argsort");
}

Sorted topk(const Tensor& x, int64_t k, int64_t axis, bool largest, bool /*sorted*/) {
    if (x.rank() == 0) {  // one element: axis 0 or -1, as torch
        graph::normalize_axis(axis, 1, "topk");
        Sorted r = topk(x.reshape({1}), k, 0, largest);
        if (k == 1) r = {r.values.reshape({}), r.indices.reshape({})};
        return r;
    }
    const int ax = graph::normalize_axis(axis, x.rank(), "topk");
    const int64_t extent = x.shape()[static_cast<size_t>(ax)];
    if (k < 0 || k > extent)
        fail("topk: k = {} for axis {} of {}; expected 0 <= k <= {}", k, axis,
             graph::to_string(x.shape()), extent);
    const Tensor indices = order(x, ax, largest, "topk").slice(ax, 0, k);
    return {gather(x, ax, indices), indices};
}

}  // namespace kiln
