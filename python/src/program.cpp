// kiln._kiln.Program: kiln::Program bound for kiln.compile (python/kiln/_compile.py), which
// turns a Python function of tensors into the list-to-list function this takes.
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "kiln/program.hpp"

namespace kiln::python {

void bind_program(nb::module_& m) {
    nb::class_<Program>(m, "Program",
                        "A function of tensors traced once per signature and replayed "
                        "(use it through kiln.compile).")
        .def(
            "__init__",
            [](Program* p, ProgramFunction fn,
               const std::vector<std::tuple<size_t, int64_t, std::vector<int64_t>>>& buckets) {
                ProgramOptions options;
                for (const auto& [input, axis, sizes] : buckets)
                    options.buckets.push_back({input, axis, sizes});
                new (p) Program(std::move(fn), std::move(options));
            },
            nb::arg("fn"),
            nb::arg("buckets") = std::vector<std::tuple<size_t, int64_t, std::vector<int64_t>>>{})
        .def("__call__", &Program::operator(), nb::arg("inputs"))
        .def("save", &Program::save, nb::arg("path"), nb::arg("annotation") = std::string(),
             "Writes every kept signature to one file (kiln::Program::save).")
        .def_static("load", &Program::load, nb::arg("path"),
                    "A program saved by save() (kiln::Program::load).")
        .def_prop_ro("annotation", &Program::annotation)
        .def("stats", [](const Program& p) {
            const Program::Stats s = p.stats();
            nb::dict d;
            d["traces"] = s.traces;
            d["replays"] = s.replays;
            d["signatures"] = s.signatures;
            d["launches"] = s.launches;
            d["resident_bytes"] = s.resident_bytes;
            d["padded"] = s.padded;
            d["run_once"] = s.run_once;
            d["recorded"] = s.recorded;
            return d;
        });
    m.def("tracing", &tracing, "Whether this thread is tracing a compiled function.");
}

}  // namespace kiln::python
