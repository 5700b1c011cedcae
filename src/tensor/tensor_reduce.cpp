// Reductions and the composite ops built from them (softmax, log_softmax, logsumexp, rms_norm,
// layer_norm, variance, std). Each composite is written as the primitive graph that defines its
// bits; the planner fuses it back into one launch where it can. f16/bf16 inputs are computed in f32
// and the result rounded once.
#include <cmath>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

using graph::FoldKind;
using graph::NodeRef;

namespace {

// x in the dtype its arithmetic runs in: f32 for the storage floats.
Tensor widened(const Tensor& x) {
    return is_half(x.dtype()) ? cast(x, DType::f32) : x;
}

Tensor keep(const Tensor& folded, const Shape& in, const std::vector<int>& axes, bool keepdim) {
    if (!keepdim) return folded;
    return folded.reshape(graph::reduced_shape(in, axes, true));
}

Tensor fold(FoldKind kind, const Tensor& x, const std::vector<int>& axes) {
    return Tensor(graph::fold_node(kind, x.node(), axes));
}

std::vector<int> axes_of(const Tensor& x, const std::vector<int64_t>& axes, const char* op) {
    return graph::normalize_axes(axes, x.rank(), op);
}

int64_t reduced_count(const Tensor& x, const std::vector<int>& axes) {
    int64_t n = 1;
    for (int a : axes) n *= x.shape()[static_cast<size_t>(a)];
    return n;
}

void require_float(const Tensor& x, const char* op) {
    if (!is_float(x.dtype()))
        fail("{}: dtype {} {}; expected f32, f16 or bf16", op, name(x.dtype()),
             graph::to_string(x.shape()));
}

void require_numeric(const Tensor& x, const char* op) {
    if (x.dtype() == DType::boolean)
        fail("{}: dtype bool {}; expected a numeric dtype", op, graph::to_string(x.shape()));
}

// sum and prod: i8/u8/bool accumulate in i32, f16/bf16 in f32 (rounded back once).
Tensor accumulate(FoldKind kind, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
                  const char* op) {
    const auto ax = axes_of(x, axes, op);
    if (kind == FoldKind::prod) require_numeric(x, op);
    Tensor in = x;
    if (x.dtype() == DType::i8 || x.dtype() == DType::u8 || x.dtype() == DType::boolean)
        in = cast(x, DType::i32);
    Tensor r = fold(kind, widened(in), ax);
    if (is_half(x.dtype())) r = cast(r, x.dtype());
    return keep(r, x.shape(), ax, keepdim);
}

Tensor extreme(FoldKind kind, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
               const char* op) {
    require_numeric(x, op);
    const auto ax = axes_of(x, axes, op);
    if (reduced_count(x, ax) == 0)
        fail("{}: the reduced axes of {} are empty", op, graph::to_string(x.shape()));
    return keep(fold(kind, x, ax), x.shape(), ax, keepdim);
}

// The mean over `ax` of an f32 (or other float) tensor, kept as keepdim.
Tensor mean_f32(const Tensor& xf, const std::vector<int>& ax) {
    const int64_t n = reduced_count(xf, ax);
    return keep(fold(FoldKind::sum, xf, ax), xf.shape(), ax, true) / static_cast<double>(n);
}

Tensor labelled(Tensor y, const std::vector<Tensor>& inputs, const char* label) {
    std::vector<NodeRef> in;
    for (const auto& i : inputs) in.push_back(i.node());
    graph::label_graph(y.node(), in, label);
    return y;
}

Tensor arg_extreme(FoldKind kind, const Tensor& x, int64_t axis, bool keepdim, const char* op) {
    require_numeric(x, op);
    const int ax = graph::normalize_axis(axis, x.rank(), op);
    const int64_t n = x.shape()[static_cast<size_t>(ax)];
    if (n == 0) fail("{}: axis {} of {} is empty", op, axis, graph::to_string(x.shape()));
    const DType index_type = n > INT32_MAX ? DType::i64 : DType::i32;
    Tensor m = keep(fold(kind, x, {ax}), x.shape(), {ax}, true);
    Tensor hit = x == m;
    if (is_float(x.dtype())) hit = hit || (isnan(x) && isnan(m));
    Shape along(x.rank(), 1);
    along[static_cast<size_t>(ax)] = n;
    Tensor index = Tensor::arange(n, index_type, x.device()).reshape(along);
    Tensor none = Tensor::full({}, static_cast<double>(n), index_type, x.device());
    Tensor candidates = where(hit, index.expand(x.shape()), none.expand(x.shape()));
    Tensor r = keep(fold(FoldKind::min, candidates, {ax}), x.shape(), {ax}, keepdim);
    return labelled(r, {x}, op);
}

// variance's and std's divisor n - correction must be positive.
void check_correction(int64_t n, int64_t correction, const char* op) {
    if (n - correction <= 0)
        fail("{}: {} elements per result with correction {}; expected more than {}", op, n,
             correction, correction);
}

// x's elements in one axis, for an arg reduction over all of them.
Tensor every_element(const Tensor& x, const char* op) {
    if (x.numel() == 0) fail("{}: {} has no elements", op, graph::to_string(x.shape()));
    return x.flatten();
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
    return accumulate(FoldKind::sum, x, axes, keepdim, "sum");
}
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
    return accumulate(FoldKind::prod, x, axes, keepdim, "prod");
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
    return extreme(FoldKind::max, x, axes, keepdim, "max");
}
Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
    return extreme(FoldKind::min, x, axes, keepdim, "min");
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
    require_float(x, "mean");
    const auto ax = axes_of(x, axes, "mean");
    if (reduced_count(x, ax) == 0)
        fail("mean: the reduced axes of {} are empty", graph::to_string(x.shape()));
    Tensor r = mean_f32(widened(x), ax);
    if (!keepdim) r = r.reshape(graph::reduced_shape(x.shape(), ax, false));
    return labelled(cast(r, x.dtype()), {x}, "mean");
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
    return arg_extreme(FoldKind::max, x, axis, keepdim, "argmax");
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim) {
    return arg_extreme(FoldKind::min, x, axis, keepdim, "argmin");
}

Tensor argmax(const Tensor& x) {
    return arg_extreme(FoldKind::max, every_element(x, "argmax"), 0, false, "argmax");
}
Tensor argmin(const Tensor& x) {
    return arg_extreme(FoldKind::min, every_element(x, "argmin"), 0, false, "argmin");
}

Tensor variance(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction,
                bool keepdim) {
    require_float(x, "variance");
    const auto ax = axes_of(x, axes, "variance");
    const int64_t n = reduced_count(x, ax);
    check_correction(n, correction, "variance");
    Tensor xf = widened(x);
    Tensor d = xf - mean_f32(xf, ax);
    Tensor v = fold(FoldKind::sum, d * d, ax) / static_cast<double>(n - correction);
    return labelled(cast(keep(v, x.shape(), ax, keepdim), x.dtype()), {x}, "variance");
}

Tensor std_dev(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction,
               bool keepdim) {
    require_float(x, "std");
    check_correction(reduced_count(x, axes_of(x, axes, "std")), correction, "std");
    Tensor s = sqrt(variance(widened(x), axes, correction, keepdim));
    return labelled(cast(s, x.dtype()), {x}, "std");
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
    require_float(x, "logsumexp");
    const auto ax = axes_of(x, axes, "logsumexp");
    if (reduced_count(x, ax) == 0)
        fail("logsumexp: the reduced axes of {} are empty", graph::to_string(x.shape()));
    Tensor xf = widened(x);
    Tensor m = keep(fold(FoldKind::max, xf, ax), x.shape(), ax, true);
    // An infinite max shifts nothing: exp(-inf - -inf) would be NaN where the row is all -inf.
    Tensor shift = where(abs(m) != INFINITY, m, 0.0);
    Tensor s = fold(FoldKind::sum, exp(xf - shift), ax);
    Tensor r = log(s) + shift.reshape(graph::reduced_shape(x.shape(), ax, false));
    return labelled(cast(keep(r, x.shape(), ax, keepdim), x.dtype()), {x}, "logsumexp");
}

Tensor softmax(const Tensor& x, int64_t axis) {
    require_float(x, "softmax");
    const int ax = graph::normalize_axis(axis, x.rank(), "softmax");
    Tensor xf = widened(x);
    Tensor m = keep(fold(FoldKind::max, xf, {ax}), x.shape(), {ax}, true);
    Tensor e = exp(xf - m);
    Tensor s = keep(fold(FoldKind::sum, e, {ax}), x.shape(), {ax}, true);
    return labelled(cast(e / s, x.dtype()), {x}, "softmax");
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
    require_float(x, "log_softmax");
    const int ax = graph::normalize_axis(axis, x.rank(), "log_softmax");
    Tensor xf = widened(x);
    Tensor m = keep(fold(FoldKind::max, xf, {ax}), x.shape(), {ax}, true);
    Tensor shifted = xf - m;
    Tensor s = keep(fold(FoldKind::sum, exp(shifted), {ax}), x.shape(), {ax}, true);
    return labelled(cast(shifted - log(s), x.dtype()), {x}, "log_softmax");
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
    require_float(x, "rms_norm");
    if (x.rank() == 0) fail("rms_norm: x is a scalar; expected rows of at least one axis");
    const int64_t n = x.shape().back();
    if (weight.rank() != 1 || weight.shape()[0] != n || weight.dtype() != x.dtype())
        fail("rms_norm: weight is {} {}; expected {} [{}] (the last axis of x {})",
             name(weight.dtype()), graph::to_string(weight.shape()), name(x.dtype()), n,
             graph::to_string(x.shape()));
    if (n == 0) fail("rms_norm: the rows of {} are empty", graph::to_string(x.shape()));
    if (!(eps >= 0)) fail("rms_norm: eps {}; expected a finite value >= 0", eps);
    const int last = static_cast<int>(x.rank()) - 1;
    Tensor xf = widened(x);
    Tensor ss = keep(fold(FoldKind::sum, xf * xf, {last}), x.shape(), {last}, true);
    Tensor inv = 1.0 / sqrt(ss / static_cast<double>(n) + eps);
    Tensor y = xf * inv * widened(weight);
    return labelled(cast(y, x.dtype()), {x, weight}, "rms_norm");
}

Tensor layer_norm(const Tensor& x, int64_t normalized, const Tensor* weight, const Tensor* bias,
                  double eps) {
    require_float(x, "layer_norm");
    if (normalized < 1 || normalized > static_cast<int64_t>(x.rank()))
        fail("layer_norm: {} normalized axes for a tensor of rank {} ({})", normalized, x.rank(),
             graph::to_string(x.shape()));
    if (!(eps >= 0)) fail("layer_norm: eps {}; expected a finite value >= 0", eps);
    std::vector<int> ax;
    for (int64_t i = static_cast<int64_t>(x.rank()) - normalized; i < int64_t(x.rank()); ++i)
        ax.push_back(static_cast<int>(i));
    const Shape tail(x.shape().end() - normalized, x.shape().end());
    for (const Tensor* p : {weight, bias})
        if (p && (p->shape() != tail || p->dtype() != x.dtype()))
            fail("layer_norm: {} is {} {}; expected {} {} (the normalized axes of x {})",
                 p == weight ? "weight" : "bias", name(p->dtype()), graph::to_string(p->shape()),
                 name(x.dtype()), graph::to_string(tail), graph::to_string(x.shape()));
    const int64_t n = reduced_count(x, ax);
    if (n == 0)
        fail("layer_norm: the normalized axes of {} are empty", graph::to_string(x.shape()));
    Tensor xf = widened(x);
    Tensor d = xf - mean_f32(xf, ax);
    Tensor var = keep(fold(FoldKind::sum, d * d, ax), x.shape(), ax, true) / static_cast<double>(n);
    Tensor y = d * (1.0 / sqrt(var + eps));
    std::vector<Tensor> inputs{x};
    if (weight) {
        y = y * widened(*weight);
        inputs.push_back(*weight);
    }
    if (bias) {
        y = y + widened(*bias);
        inputs.push_back(*bias);
    }
    return labelled(cast(y, x.dtype()), inputs, "layer_norm");
}

Tensor Tensor::sum(const std::vector<int64_t>& axes, bool keepdim) const {
    return kiln::sum(*this, axes, keepdim);
}
Tensor Tensor::mean(const std::vector<int64_t>& axes, bool keepdim) const {
    return kiln::mean(*this, axes, keepdim);
}
Tensor Tensor::max(const std::vector<int64_t>& axes, bool keepdim) const {
    return kiln::max(*this, axes, keepdim);
}
Tensor Tensor::min(const std::vector<int64_t>& axes, bool keepdim) const {
    return kiln::min(*this, axes, keepdim);
}
Tensor Tensor::prod(const std::vector<int64_t>& axes, bool keepdim) const {
    return kiln::prod(*this, axes, keepdim);
}

}  // namespace kiln
