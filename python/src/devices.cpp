// kiln.Device and the registry: kiln.devices(), best_device(), cpu_device(), find_device(),
// backend_status(). Devices live as long as the process; Python holds references to them.
#include <string>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"

namespace kiln::python {

Device& to_device(nb::handle h) {
    if (h.is_none()) return cpu_device();
    if (nb::isinstance<Device>(h)) return nb::cast<Device&>(h);
    if (nb::isinstance<nb::str>(h)) return find_device(nb::cast<std::string>(h));
    if (nb::isinstance<nb::int_>(h)) return find_device(std::to_string(to_int64(h, "device")));
    throw nb::type_error(("device: " + nb::cast<std::string>(nb::repr(h)) +
                          " is not a device; expected None (the CPU), a kiln.Device, a backend "
                          "name ('cpu', 'opencl', 'cuda'), a device id or an index into "
                          "kiln.devices()")
                             .c_str());
}

void bind_devices(nb::module_& m) {
    constexpr auto ref = nb::rv_policy::reference;
    nb::class_<Device>(m, "Device",
                       "A device kiln runs on: the CPU, a CUDA GPU or an OpenCL device.")
        .def_prop_ro("name", [](const Device& d) { return d.info().name; })
        .def_prop_ro(
            "backend", [](const Device& d) { return std::string(name(d.info().backend)); },
            "'cpu', 'cuda' or 'opencl'.")
        .def_prop_ro(
            "id", [](const Device& d) { return d.info().id; },
            "The id kiln's caches use: backend, model, arch, driver and compiler.")
        .def_prop_ro("arch", [](const Device& d) { return d.info().arch; })
        .def_prop_ro("driver", [](const Device& d) { return d.info().driver; })
        .def_prop_ro("compiler", [](const Device& d) { return d.info().compiler; })
        .def_prop_ro("memory_bytes", [](const Device& d) { return d.info().memory_bytes; })
        .def_prop_ro("compute_units", [](const Device& d) { return d.info().compute_units; })
        .def_prop_ro("warp_size", [](const Device& d) { return d.info().warp_size; })
        .def_prop_ro(
            "ordinal", [](const Device& d) { return d.info().ordinal; },
            "The driver's index of the device (the CUDA ordinal; 0 on the CPU).")
        .def(
            "synchronize",
            [](Device& d) {
                nb::gil_scoped_release release;
                d.synchronize();
            },
            "Waits until the work queued on the device is done.")
        .def("__eq__",
             [](const Device& a, nb::handle b) {
                 return nb::isinstance<Device>(b) && &a == &nb::cast<const Device&>(b);
             })
        .def("__hash__", [](const Device& d) { return reinterpret_cast<uintptr_t>(&d); })
        .def("__repr__", [](const Device& d) {
            return "kiln.Device('" + d.info().id + "', backend='" +
                   std::string(name(d.info().backend)) + "', name='" + d.info().name + "')";
        });

    m.def(
        "devices",
        [] {
            std::vector<Device*> all(kiln::devices().begin(), kiln::devices().end());
            return all;
        },
        ref, "Every device kiln found, the CPU first.");
    m.def("cpu_device", &kiln::cpu_device, ref, "The CPU device.");
    m.def("best_device", &kiln::best_device, ref,
          "The first CUDA device, else the first OpenCL GPU, else the CPU.");
    m.def(
        "find_device", [](nb::handle which) -> Device& { return to_device(which); }, ref,
        nb::arg("which"),
        "A device by id, by index into devices() or by backend name ('cuda': the first CUDA "
        "device); kiln.Error when there is none.");
    m.def(
        "backend_status",
        [] {
            std::vector<std::tuple<std::string, bool, std::string>> out;
            for (const auto& s : kiln::backend_status())
                out.emplace_back(std::string(name(s.backend)), s.available, s.reason);
            return out;
        },
        "(backend, available, reason) for cpu, cuda and opencl: why a backend found no device.");
}

}  // namespace kiln::python
