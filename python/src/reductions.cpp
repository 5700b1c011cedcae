// Reductions over axes (None: all) with keepdim, argmax/argmin, variance, std, logsumexp, cumsum,
// cumprod, and the normalizations built on them: softmax, log_softmax, layer_norm, rms_norm. Each
// is kiln.f(x, ...) and x.f(...).
#include <utility>

#include "bindings.hpp"

namespace kiln::python {
namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

struct Reduction {
    const char* name;
    ReduceFn fn;
    const char* doc;
};

constexpr Reduction kReductions[] = {
    {"sum", &kiln::sum, "Sum over axis (None: all); i8, u8 and bool sum to i32."},
    {"mean", &kiln::mean, "Mean over axis (None: all); float dtypes."},
    {"max", &kiln::max, "Largest element over axis (None: all); NaN propagates."},
    {"min", &kiln::min, "Smallest element over axis (None: all); NaN propagates."},
    {"prod", &kiln::prod, "Product over axis (None: all); i8, u8 and bool multiply to i32."},
};

// Both forms of one function: kiln.name(x, ...) and x.name(...).
template <typename F, typename... Extra>
void def_both(nb::module_& m, TensorClass& cls, const char* name, F fn, const char* doc,
              const Extra&... extra) {
    m.def(name, fn, nb::arg("x"), extra..., doc);
    cls.def(name, fn, extra..., doc);
}

using ArgAll = Tensor (*)(const Tensor&);
using ArgAlong = Tensor (*)(const Tensor&, int64_t, bool);

// argmax/argmin: along an axis, or over every element when axis is None (keepdim: every axis
// kept with extent 1, as numpy's keepdims).
template <ArgAll all, ArgAlong along>
Tensor arg_reduction(const Tensor& x, nb::handle axis, bool keepdim) {
    if (!axis.is_none()) return along(x, to_int64(axis, "axis"), keepdim);
    Tensor r = all(x);
    return keepdim ? r.reshape(Shape(x.rank(), 1)) : r;
}

}  // namespace

void bind_reductions(nb::module_& m, TensorClass& cls) {
    using nb::arg;
    for (const Reduction& r : kReductions) {
        ReduceFn fn = r.fn;
        auto call = [fn](const Tensor& x, nb::handle axis, bool keepdim) {
            return fn(x, to_axes(axis), keepdim);
        };
        def_both(m, cls, r.name, call, r.doc, arg("axis") = nb::none(), arg("keepdim") = false);
    }
    def_both(m, cls, "argmax", &arg_reduction<&argmax, &argmax>,
             "i32 index of the first largest element along axis (NaN counts as the largest); "
             "axis=None: the flat index over every element.",
             arg("axis") = nb::none(), arg("keepdim") = false);
    def_both(m, cls, "argmin", &arg_reduction<&argmin, &argmin>,
             "i32 index of the first smallest element along axis; axis=None: the flat index over "
             "every element.",
             arg("axis") = nb::none(), arg("keepdim") = false);
    def_both(
        m, cls, "std",
        [](const Tensor& x, nb::handle axis, int64_t correction, bool keepdim) {
            return std_dev(x, to_axes(axis), correction, keepdim);
        },
        "Standard deviation: sqrt(variance) over axis (None: all), with correction as variance.",
        arg("axis") = nb::none(), arg("correction") = 1, arg("keepdim") = false);
    for (auto [name, fn] : {std::pair{"cumsum", &cumsum}, std::pair{"cumprod", &cumprod}})
        def_both(
            m, cls, name,
            [fn](const Tensor& x, nb::handle axis) {
                return axis.is_none() ? fn(x.flatten(), 0) : fn(x, to_int64(axis, "axis"));
            },
            "The cumulative sum / product along axis (None: over the flattened elements, as "
            "numpy); i8, u8 and bool give i32. A blocked scan of folds (docs/graph.md states "
            "its order), not the sequential sum.",
            arg("axis") = nb::none());
    def_both(
        m, cls, "logsumexp",
        [](const Tensor& x, nb::handle axis, bool keepdim) {
            return logsumexp(x, to_axes(axis), keepdim);
        },
        "log(sum(exp(x))) over axis (None: all), computed as log(sum(exp(x - max))) + max; a row "
        "of -inf gives -inf (torch.logsumexp).",
        arg("axis") = nb::none(), arg("keepdim") = false);
    def_both(
        m, cls, "variance",
        [](const Tensor& x, nb::handle axis, int64_t correction, bool keepdim) {
            return variance(x, to_axes(axis), correction, keepdim);
        },
        "Sum of squared deviations from the mean over (n - correction), over axis (None: all).",
        arg("axis") = nb::none(), arg("correction") = 1, arg("keepdim") = false);
    def_both(
        m, cls, "softmax", [](const Tensor& x, int64_t axis) { return softmax(x, axis); },
        "exp(x - max) / sum(exp(x - max)) along axis.", arg("axis") = -1);
    def_both(
        m, cls, "log_softmax", [](const Tensor& x, int64_t axis) { return log_softmax(x, axis); },
        "x - max - log(sum(exp(x - max))) along axis.", arg("axis") = -1);
    def_both(
        m, cls, "layer_norm",
        [](const Tensor& x, int64_t normalized, const Tensor* weight, const Tensor* bias,
           double eps) { return layer_norm(x, normalized, weight, bias, eps); },
        "(x - mean) / sqrt(var + eps) over the last `normalized` axes, then * weight + bias when "
        "given.",
        arg("normalized") = 1, arg("weight").none() = nb::none(), arg("bias").none() = nb::none(),
        arg("eps") = 1e-5);
    def_both(
        m, cls, "rms_norm",
        [](const Tensor& x, const Tensor& weight, double eps) { return rms_norm(x, weight, eps); },
        "x / sqrt(mean(x^2 over the last axis) + eps) * weight (graph op; kiln.ops.rms_norm is "
        "the shipped tuned kernel).",
        arg("weight"), arg("eps") = 1e-6);
}

}  // namespace kiln::python
