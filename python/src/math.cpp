// Elementwise functions: kiln.exp(x) and x.exp() alike, gelu with its form, pow, minimum,
// maximum, floor_divide, remainder, clamp, tril/triu, where, and casts (kiln.cast, x.astype,
// x.to).
#include <optional>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "kiln/error.hpp"

namespace kiln::python {
namespace {

struct Unary {
    const char* name;
    Tensor (*fn)(const Tensor&);
    const char* doc;
};

constexpr Unary kUnary[] = {
    {"neg", &kiln::neg, "-x"},
    {"abs", &kiln::abs, "|x|"},
    {"exp", &kiln::exp, "e^x (kiln's own exp: the same bits on every device)"},
    {"log", &kiln::log, "natural logarithm"},
    {"sqrt", &kiln::sqrt, "correctly rounded square root"},
    {"rsqrt", &kiln::rsqrt, "1 / sqrt(x)"},
    {"sin", &kiln::sin, "sine"},
    {"cos", &kiln::cos, "cosine"},
    {"tanh", &kiln::tanh, "hyperbolic tangent"},
    {"erf", &kiln::erf, "error function"},
    {"sigmoid", &kiln::sigmoid, "1 / (1 + e^-x)"},
    {"relu", &kiln::relu, "max(x, 0)"},
    {"silu", &kiln::silu, "x * sigmoid(x)"},
    {"square", &kiln::square, "x * x"},
    {"recip", &kiln::recip, "1 / x"},
    {"floor", &kiln::floor, "round down"},
    {"ceil", &kiln::ceil, "round up"},
    {"round", &kiln::round, "round half to even"},
    {"isnan", &kiln::isnan, "whether x is NaN (a bool tensor)"},
    {"logical_not", &kiln::operator!, "not x, for bool tensors"},
};

GeluForm gelu_form(const std::string& approximate) {
    if (approximate == "none" || approximate == "erf") return GeluForm::erf;
    if (approximate == "tanh") return GeluForm::tanh;
    throw nb::value_error(
        ("gelu: approximate='" + approximate + "'; expected 'none' (the erf form) or 'tanh'")
            .c_str());
}

using TensorTensor = Tensor (*)(const Tensor&, const Tensor&);
using TensorNumber = Tensor (*)(const Tensor&, double);
using NumberTensor = Tensor (*)(double, const Tensor&);

// kiln.name(a, b) with a tensor on either side and a number on at most one.
template <TensorTensor tt, TensorNumber tn, NumberTensor nt>
void def_binary(nb::module_& m, const char* name, const char* doc) {
    m.def(name, tt, nb::arg("a"), nb::arg("b"));
    m.def(name, tn, nb::arg("a"), nb::arg("b"));
    m.def(name, nt, nb::arg("a"), nb::arg("b"), doc);
}

// clamp's bounds from Python: None, a tensor or a number; the lower applied first.
Tensor clamp_any(const Tensor& x, nb::handle lo, nb::handle hi) {
    if (lo.is_none() && hi.is_none()) return clamp(x, nullptr, nullptr);  // its error
    Tensor y = x;
    for (nb::handle bound : {lo, hi}) {
        if (bound.is_none()) continue;
        const bool lower = bound.ptr() == lo.ptr();
        Tensor t;
        if (nb::try_cast<Tensor>(bound, t)) {
            y = lower ? clamp(y, &t, nullptr) : clamp(y, nullptr, &t);
            continue;
        }
        double v = 0;
        if (!nb::try_cast<double>(bound, v))
            throw nb::type_error(fmt::format("clamp: {} is {}; expected None, a number or a "
                                             "kiln.Tensor",
                                             lower ? "min" : "max", nb::inst_name(bound).c_str())
                                     .c_str());
        y = lower ? clamp(y, v, std::nullopt) : clamp(y, std::nullopt, v);
    }
    return y;
}

}  // namespace

void bind_math(nb::module_& m, TensorClass& cls) {
    using nb::arg;
    for (const Unary& u : kUnary) {
        m.def(u.name, u.fn, arg("x"), u.doc);
        cls.def(u.name, u.fn, u.doc);
    }
    const auto gelu_fn = [](const Tensor& x, const std::string& approximate) {
        return gelu(x, gelu_form(approximate));
    };
    const char* gelu_doc = "GELU: x * Phi(x) (approximate='none', the erf form) or the tanh form.";
    m.def("gelu", gelu_fn, arg("x"), arg("approximate") = "none", gelu_doc);
    cls.def("gelu", gelu_fn, arg("approximate") = "none", gelu_doc);

    m.def(
        "pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, arg("a"), arg("b"));
    m.def(
        "pow", [](const Tensor& a, double b) { return pow(a, b); }, arg("a"), arg("b"),
        "a ** b, elementwise with broadcasting.");
    def_binary<&minimum, &minimum, &minimum>(m, "minimum",
                                             "The smaller of a and b (broadcast; one may be a "
                                             "number, which takes the tensor's dtype).");
    def_binary<&maximum, &maximum, &maximum>(m, "maximum",
                                             "The larger of a and b (broadcast; one may be a "
                                             "number, which takes the tensor's dtype).");
    def_binary<&floor_divide, &floor_divide, &floor_divide>(
        m, "floor_divide",
        "a // b: the quotient rounded down (integers: x // 0 == 0; docs/python.md).");
    def_binary<&remainder, &remainder, &remainder>(
        m, "remainder",
        "a % b with the divisor's sign (numpy.remainder; integers: x % 0 == x; docs/python.md).");
    const char* clamp_doc =
        "min(max(x, min), max) with either bound None (not both); a bound is a tensor or a "
        "number (which takes x's dtype). NaN propagates; min > max gives max (torch.clamp).";
    for (const char* name : {"clamp", "clip"}) {
        m.def(name, &clamp_any, arg("x"), arg("min") = nb::none(), arg("max") = nb::none(),
              clamp_doc);
        cls.def(name, &clamp_any, arg("min") = nb::none(), arg("max") = nb::none(), clamp_doc);
    }
    for (auto [name, fn, doc] :
         {std::tuple{"tril", &tril,
                     "The lower triangle of the last two axes (column - row <= "
                     "diagonal kept, the rest 0)."},
          std::tuple{"triu", &triu,
                     "The upper triangle of the last two axes (column - row >= "
                     "diagonal kept, the rest 0)."}}) {
        m.def(name, fn, arg("x"), arg("diagonal") = 0, doc);
        cls.def(name, fn, arg("diagonal") = 0, doc);
    }
    m.def(
        "where", [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); },
        arg("cond"), arg("a"), arg("b"));
    m.def(
        "where", [](const Tensor& c, const Tensor& a, double b) { return where(c, a, b); },
        arg("cond"), arg("a"), arg("b"));
    m.def(
        "where", [](const Tensor& c, double a, const Tensor& b) { return where(!c, b, a); },
        arg("cond"), arg("a"), arg("b"),
        "a where cond (a bool tensor) holds, else b; broadcast; one of a, b may be a number.");

    const auto cast_fn = [](const Tensor& x, nb::handle dtype) {
        return cast(x, to_dtype(dtype, "cast"));
    };
    const char* cast_doc =
        "x converted to dtype by kiln's casts (floats to integers round toward zero and saturate; "
        "NaN gives 0; docs/numerics.md).";
    m.def("cast", cast_fn, arg("x"), arg("dtype"), cast_doc);
    cls.def("astype", cast_fn, arg("dtype"), cast_doc);

    // x.to(dtype), x.to(device), x.to(device, dtype) or by keyword: a kiln.DType or dtype name
    // casts; a kiln.Device, backend name, device id or index moves the values (their bits).
    const auto to_fn = [](const Tensor& x, nb::handle target, nb::handle dtype, nb::handle device) {
        Tensor out = x;
        if (!target.is_none()) {
            if (is_dtype(target)) {
                if (!dtype.is_none()) throw nb::type_error("to: two dtypes given");
                dtype = target;
            } else {
                if (!device.is_none()) throw nb::type_error("to: two devices given");
                device = target;
            }
        }
        if (!device.is_none()) out = out.to(to_device(device));
        if (!dtype.is_none()) out = cast(out, to_dtype(dtype, "to"));
        return out;
    };
    cls.def("to", to_fn, arg("target") = nb::none(), arg("dtype") = nb::none(),
            arg("device") = nb::none(),
            "x on another device and/or in another dtype: to(dtype), to(device), "
            "to(device, dtype), to(device=..., dtype=...). A device is a kiln.Device, a backend "
            "name ('cpu', 'opencl', 'cuda'), a device id or an index into kiln.devices(); the "
            "values move with their bits. A dtype converts by kiln's casts (docs/numerics.md).");
    cls.def(
        "cpu", [](const Tensor& x) { return x.to(cpu_device()); },
        "x on the CPU (itself when it lives there).");
}

}  // namespace kiln::python
