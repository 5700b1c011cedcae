// kiln.ops: the two shipped tuned ops on tensors (rms_norm, matvec_q8 with the host Q8_0
// quantizer), and kiln.tune(op, *inputs), which runs one of them through the tuner and reports
// its decision (the variants' medians on a miss, the cached winner on a hit).
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "kiln/error.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "kiln/tune.hpp"
#include "owned_numpy.hpp"

namespace kiln::python {
namespace {

struct TuneResult {
    TuneReport report;
    Tensor output;
};

Tensor as_tensor(Buffer out, const Shape& shape) {
    return Tensor::from_buffer(std::make_shared<Buffer>(std::move(out)), shape);
}

// rms_norm over the last axis of x (its rows), with w of that axis's length.
struct RmsNormArgs {
    const Tensor& x;
    const Tensor& w;
    int64_t n;
};
RmsNormArgs rms_norm_args(const Tensor& x, const Tensor& w) {
    if (x.rank() < 1 || w.rank() != 1 || w.size(0) != x.size(-1))
        fail(
            "ops.rms_norm: x of shape ({}) and w of shape ({}); expected w's one axis as long as "
            "x's last",
            fmt::join(x.shape(), ", "), fmt::join(w.shape(), ", "));
    if (&x.device() != &w.device())
        fail("ops.rms_norm: x on {} and w on {}; expected one device", x.device().info().id,
             w.device().info().id);
    return {x, w, x.size(-1)};
}

// matvec_q8's rows and k from the shapes of W's bytes [rows, k/32*34] and x's [k/32*34].
std::pair<int64_t, int64_t> matvec_q8_shape(const Tensor& w_q8, const Tensor& x_q8) {
    if (w_q8.rank() != 2 || x_q8.rank() != 1 || w_q8.size(1) != x_q8.size(0) ||
        x_q8.size(0) % ops::kQ8BlockBytes != 0)
        fail(
            "ops.matvec_q8: W of shape ({}) and x of shape ({}); expected u8 Q8_0 bytes, W "
            "[rows, k/32*34] and x [k/32*34] (kiln.ops.quantize_q8 makes them)",
            fmt::join(w_q8.shape(), ", "), fmt::join(x_q8.shape(), ", "));
    if (&w_q8.device() != &x_q8.device())
        fail("ops.matvec_q8: W on {} and x on {}; expected one device", w_q8.device().info().id,
             x_q8.device().info().id);
    return {w_q8.size(0), x_q8.size(0) / ops::kQ8BlockBytes * ops::kQ8BlockValues};
}

Tensor rms_norm_op(const Tensor& x, const Tensor& w, double eps) {
    const RmsNormArgs a = rms_norm_args(x, w);
    nb::gil_scoped_release release;
    return as_tensor(
        ops::rms_norm(x.device(), x.buffer(), w.buffer(), a.n, static_cast<float>(eps)), x.shape());
}

Tensor matvec_q8_op(const Tensor& w_q8, const Tensor& x_q8) {
    const auto [rows, k] = matvec_q8_shape(w_q8, x_q8);
    nb::gil_scoped_release release;
    return as_tensor(ops::matvec_q8(w_q8.device(), w_q8.buffer(), x_q8.buffer(), rows, k), {rows});
}

// Q8_0 bytes of f32 values whose last axis is a multiple of 32: [..., n] -> [..., n/32*34] u8.
nb::object quantize_q8(nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu, const float> values) {
    const size_t n = values.ndim() ? values.shape(values.ndim() - 1) : 1;
    if (values.ndim() == 0 || n % ops::kQ8BlockValues != 0)
        fail("ops.quantize_q8: a last axis of {} values; expected a multiple of {}", n,
             ops::kQ8BlockValues);
    std::vector<float> host(values.data(), values.data() + values.size());
    std::vector<size_t> shape;
    for (size_t i = 0; i + 1 < values.ndim(); ++i) shape.push_back(values.shape(i));
    shape.push_back(n / ops::kQ8BlockValues * ops::kQ8BlockBytes);
    return owned_numpy(ops::quantize_q8_0(host), shape).cast();
}

TuneResult tune(const std::string& op, nb::args inputs, double eps) {
    std::vector<Tensor> t;
    for (nb::handle h : inputs) t.push_back(nb::cast<Tensor>(h));
    const auto expect = [&](size_t count, const char* what) {
        if (t.size() != count) fail("tune {}: {} inputs; expected {}", op, t.size(), what);
    };
    nb::gil_scoped_release release;
    if (op == "rms_norm") {
        expect(2, "x and w");
        const RmsNormArgs a = rms_norm_args(t[0], t[1]);
        auto tuned = ops::rms_norm_tuned(t[0].device(), t[0].buffer(), t[1].buffer(), a.n,
                                         static_cast<float>(eps));
        Tensor out = as_tensor(tuned.run(Tuner::process_default()), t[0].shape());
        return {tuned.report(), out};
    }
    if (op == "matvec_q8") {
        expect(2, "W and x as Q8_0 bytes");
        const auto [rows, k] = matvec_q8_shape(t[0], t[1]);
        auto tuned = ops::matvec_q8_tuned(t[0].device(), t[0].buffer(), t[1].buffer(), rows, k);
        Tensor out = as_tensor(tuned.run(Tuner::process_default()), {rows});
        return {tuned.report(), out};
    }
    fail("tune: unknown op '{}'; expected rms_norm or matvec_q8", op);
}

}  // namespace

void bind_shipped_ops(nb::module_& m) {
    nb::class_<TuneResult>(m, "TuneReport", "What kiln.tune decided, and the op's output.")
        .def_prop_ro("op", [](const TuneResult& r) { return r.report.op; })
        .def_prop_ro(
            "key", [](const TuneResult& r) { return r.report.key; },
            "The key with the variant-set digest.")
        .def_prop_ro("device_id", [](const TuneResult& r) { return r.report.device_id; })
        .def_prop_ro("winner", [](const TuneResult& r) { return r.report.winner; })
        .def_prop_ro(
            "benched", [](const TuneResult& r) { return r.report.benched; },
            "Variants benched by this run (0 on a hit).")
        .def_prop_ro(
            "hit", [](const TuneResult& r) { return r.report.hit; },
            "Whether the winner came from the cache (nothing benched).")
        .def_prop_ro("retuned", [](const TuneResult& r) { return r.report.retuned; })
        .def_prop_ro("cache_file", [](const TuneResult& r) { return r.report.cache_file; })
        .def_prop_ro(
            "variant_ms", [](const TuneResult& r) { return r.report.variant_ms; },
            "On a miss, (variant, median ms) for each variant.")
        .def_prop_ro("output", [](const TuneResult& r) { return r.output; })
        .def("__repr__", [](const TuneResult& r) {
            return fmt::format("kiln.TuneReport(op='{}', winner='{}', hit={}, benched={})",
                               r.report.op, r.report.winner, r.report.hit ? "True" : "False",
                               r.report.benched);
        });
    m.def("tune", &tune, nb::arg("op"), nb::arg("inputs"), nb::arg("eps") = 1e-6,
          "Runs a shipped op through the process tuner: 'rms_norm' (x, w, eps=) or 'matvec_q8' "
          "(W_q8, x_q8). A miss races every variant and records the fastest; a hit runs the "
          "cached winner once. Returns a TuneReport with the output.");

    nb::module_ ops = m.def_submodule("ops", "kiln's shipped tuned ops, on resolved tensors.");
    ops.def("rms_norm", &rms_norm_op, nb::arg("x"), nb::arg("w"), nb::arg("eps") = 1e-6,
            "x / sqrt(mean(x^2) + eps) * w over the last axis of x (f32, f16 or bf16), with the "
            "tuner's winning variant (tuning on a miss).");
    ops.def("matvec_q8", &matvec_q8_op, nb::arg("w_q8"), nb::arg("x_q8"),
            "y = W x in f32, W [rows, k/32*34] and x [k/32*34] Q8_0 bytes (u8), k a multiple of "
            "64, with the tuner's winning variant.");
    ops.def("quantize_q8", &quantize_q8, nb::arg("values"),
            "Q8_0 bytes (numpy u8) of float32 values whose last axis is a multiple of 32: per "
            "block of 32, d = max|v|/127 as f16, then round(v/d) as int8.");
}

}  // namespace kiln::python
