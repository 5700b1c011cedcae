// kiln._kiln: the compiled half of the Python package; python/kiln/__init__.py re-exports it.
#include "bindings.hpp"

NB_MODULE(_kiln, m) {
    using namespace kiln::python;
    m.doc() = "kiln's C++ library bound for Python (use it through `import kiln`).";
    // Devices live for the process, and modules such as torch keep Python objects alive past
    // nanobind's exit check: its leak report would only be noise.
    nb::set_leak_warnings(false);
    m.attr("__version__") = KILN_VERSION;  // the project's version (CMakeLists.txt)
    bind_errors(m);
    bind_dtypes(m);
    bind_devices(m);
    TensorClass tensor(m, "Tensor",
                       "A lazy tensor on a device. Ops build a graph; resolve(), numpy() or "
                       "DLPack export compute it (fused, tuned, bit-identical on every device).");
    bind_tensor(m, tensor);
    bind_creation(m);
    bind_operators(tensor);
    bind_math(m, tensor);
    bind_reductions(m, tensor);
    bind_views(m, tensor);
    bind_indexing(m, tensor);
    bind_sorting(m, tensor);
    bind_getitem(tensor);
    bind_setitem(tensor);
    bind_host_arrays(m, tensor);
    bind_dlpack(m);
    bind_shipped_ops(m);
    bind_program(m);
    bind_gguf(m);
}
