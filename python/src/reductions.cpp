// Reductions over axes (None: all) with keepdim, argmax/argmin, variance, and the normalizations
// built on them: softmax, log_softmax, layer_norm, rms_norm. Each is kiln.f(x, ...) and x.f(...).
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
    def_both(
        m, cls, "argmax",
        [](const Tensor& x, int64_t axis, bool keepdim) { return argmax(x, axis, keepdim); },
        "i32 index of the first largest element along axis (NaN counts as the largest).",
        arg("axis"), arg("keepdim") = false);
    def_both(
        m, cls, "argmin",
        [](const Tensor& x, int64_t axis, bool keepdim) { return argmin(x, axis, keepdim); },
        "i32 index of the first smallest element along axis.", arg("axis"), arg("keepdim") = false);
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
