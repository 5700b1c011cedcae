// Tensors made on a device: zeros, ones, full, arange, linspace, eye, the *_like forms, rand,
// randn. (kiln.tensor, which copies host data, is in host_arrays.cpp.)
#include <cmath>
#include <optional>
#include <random>

#include <nanobind/stl/optional.h>

#include "bindings.hpp"
#include "kiln/error.hpp"

namespace kiln::python {
namespace {

DType dtype_or(nb::handle h, DType fallback, const char* what) {
    return h.is_none() ? fallback : to_dtype(h, what);
}

// The seeds of rand and randn called without one: a process-wide stream (splitmix64), started
// from std::random_device at import or by kiln.manual_seed. Called with the GIL held.
uint64_t& seed_state() {
    static uint64_t state = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    return state;
}
uint64_t next_seed() {
    uint64_t z = (seed_state() += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
}

// A seed given by Python: an int from 0 to 2^64 - 1.
uint64_t to_seed(nb::handle h, const char* what) {
    if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h))
        throw nb::type_error(
            fmt::format("{}: seed is {}; expected an int or None", what, nb::inst_name(h).c_str())
                .c_str());
    const unsigned long long v = PyLong_AsUnsignedLongLong(h.ptr());
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        fail("{}: seed {} is out of range; expected 0 to 2^64 - 1", what, nb::str(h).c_str());
    }
    return v;
}

using RandomFn = Tensor (*)(const Shape&, uint64_t, DType, Device&);

// rand and randn: (shape, seed=None, dtype=None, device=None).
template <RandomFn make>
void def_random(nb::module_& m, const char* name, const char* doc) {
    m.def(
        name,
        [name](nb::handle shape, nb::handle seed, nb::handle dt, nb::handle dev) {
            const uint64_t s = seed.is_none() ? next_seed() : to_seed(seed, name);
            return make(to_ints(shape, name), s, dtype_or(dt, DType::f32, name), to_device(dev));
        },
        nb::arg("shape"), nb::arg("seed") = nb::none(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none(), doc);
}

}  // namespace

void bind_creation(nb::module_& m) {
    using nb::arg;
    const auto dtype = arg("dtype") = nb::none();
    const auto device = arg("device") = nb::none();
    m.def(
        "zeros",
        [](nb::handle shape, nb::handle dt, nb::handle dev) {
            return Tensor::zeros(to_ints(shape, "zeros: shape"), dtype_or(dt, DType::f32, "zeros"),
                                 to_device(dev));
        },
        arg("shape"), dtype, device, "A tensor of zeros (f32 unless dtype is given).");
    m.def(
        "ones",
        [](nb::handle shape, nb::handle dt, nb::handle dev) {
            return Tensor::ones(to_ints(shape, "ones: shape"), dtype_or(dt, DType::f32, "ones"),
                                to_device(dev));
        },
        arg("shape"), dtype, device, "A tensor of ones (f32 unless dtype is given).");
    m.def(
        "full",
        [](nb::handle shape, double value, nb::handle dt, nb::handle dev) {
            return Tensor::full(to_ints(shape, "full: shape"), value,
                                dtype_or(dt, DType::f32, "full"), to_device(dev));
        },
        arg("shape"), arg("value"), dtype, device,
        "A tensor of one value, converted to dtype by kiln's casts (f32 unless dtype is given).");
    m.def(
        "arange",
        [](double start, nb::handle stop, double step, nb::handle dt, nb::handle dev) {
            Device& d = to_device(dev);
            if (stop.is_none()) {
                // arange(n): 0 .. n-1, i32 unless a dtype is given.
                if (std::floor(start) == start && dt.is_none()) {
                    if (!(std::fabs(start) < 0x1p63))
                        fail("arange: {} elements do not fit a 64-bit count", start);
                    return Tensor::arange(static_cast<int64_t>(start), DType::i32, d);
                }
                return Tensor::arange(0, start, 1, dtype_or(dt, DType::f32, "arange"), d);
            }
            return Tensor::arange(start, nb::cast<double>(stop), step,
                                  dtype_or(dt, DType::f32, "arange"), d);
        },
        arg("start"), arg("stop") = nb::none(), arg("step") = 1.0, dtype, device,
        "start, start + step, ... below stop (torch.arange). arange(n) gives i32 0 .. n-1; "
        "with a stop, f32 unless dtype is given.");
    m.def(
        "linspace",
        [](double start, double stop, int64_t steps, nb::handle dt, nb::handle dev) {
            return Tensor::linspace(start, stop, steps, dtype_or(dt, DType::f32, "linspace"),
                                    to_device(dev));
        },
        arg("start"), arg("stop"), arg("steps"), dtype, device,
        "`steps` evenly spaced values from start to stop, both ends included (torch.linspace; "
        "float dtypes, f32 unless given).");
    m.def(
        "eye",
        [](int64_t n, std::optional<int64_t> cols, int64_t k, nb::handle dt, nb::handle dev) {
            return Tensor::eye(n, cols, k, dtype_or(dt, DType::f32, "eye"), to_device(dev));
        },
        arg("n"), arg("m") = nb::none(), arg("k") = 0, dtype, device,
        "An n x m matrix (m defaults to n) with ones on diagonal k (k > 0 above the main one), "
        "zeros elsewhere (numpy.eye; f32 unless dtype is given).");
    const auto like = [](nb::handle dt, const char* what) {
        return dt.is_none() ? std::optional<DType>{} : std::optional{to_dtype(dt, what)};
    };
    m.def(
        "zeros_like",
        [like](const Tensor& x, nb::handle dt) { return zeros_like(x, like(dt, "zeros_like")); },
        arg("x"), dtype, "Zeros of x's shape and device (and dtype unless one is given).");
    m.def(
        "ones_like",
        [like](const Tensor& x, nb::handle dt) { return ones_like(x, like(dt, "ones_like")); },
        arg("x"), dtype, "Ones of x's shape and device (and dtype unless one is given).");
    m.def(
        "full_like",
        [like](const Tensor& x, double value, nb::handle dt) {
            return full_like(x, value, like(dt, "full_like"));
        },
        arg("x"), arg("value"), dtype,
        "value in x's shape and device (and dtype unless one is given), by kiln's casts.");
    def_random<&Tensor::rand>(m, "rand",
                              "Uniform in [0, 1) from a counter-based hash of (seed, index): the "
                              "same values on every device. Without a seed, the next of the "
                              "process's seeds (kiln.manual_seed).");
    def_random<&Tensor::randn>(m, "randn",
                               "Standard normal from a counter-based hash of (seed, index): the "
                               "same values on every device. Without a seed, the next of the "
                               "process's seeds (kiln.manual_seed).");
    m.def(
        "manual_seed", [](nb::handle seed) { seed_state() = to_seed(seed, "manual_seed"); },
        arg("seed"),
        "Restarts the seeds that rand and randn draw when called without one: the same "
        "manual_seed gives the same tensors after it (torch.manual_seed).");
}

}  // namespace kiln::python
