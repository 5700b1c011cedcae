// kiln._kiln.Program: kiln::Program bound for kiln.compile (python/kiln/_compile.py), which
// turns a Python function of tensors into the list-to-list function this takes.
#include <nanobind/stl/function.h>

#include "bindings.hpp"
#include "kiln/program.hpp"

namespace kiln::python {

void bind_program(nb::module_& m) {
    nb::class_<Program>(m, "Program",
                        "A function of tensors traced once per signature and replayed "
                        "(use it through kiln.compile).")
        .def(nb::init<ProgramFunction>(), nb::arg("fn"))
        .def("__call__", &Program::operator(), nb::arg("inputs"))
        .def("stats", [](const Program& p) {
            const Program::Stats s = p.stats();
            nb::dict d;
            d["traces"] = s.traces;
            d["replays"] = s.replays;
            d["signatures"] = s.signatures;
            d["launches"] = s.launches;
            d["resident_bytes"] = s.resident_bytes;
            return d;
        });
    m.def("tracing", &tracing, "Whether this thread is tracing a compiled function.");
}

}  // namespace kiln::python
