// kiln::Error arrives in Python as kiln.Error (an Exception subclass) with the same message.
#include "bindings.hpp"
#include "kiln/error.hpp"

namespace kiln::python {

void bind_errors(nb::module_& m) {
    nb::exception<kiln::Error> error(m, "Error", PyExc_Exception);
    error.attr("__doc__") =
        "A kiln error: bad input, misuse or a failure kiln cannot recover from. The message "
        "names what was wrong and what was expected.";
}

}  // namespace kiln::python
