// Device::wrap and Device::address's defaults: backends whose memory is not an address another
// library can hold (OpenCL) refuse both.
#include <memory>

#include "kiln/device.hpp"
#include "kiln/error.hpp"

namespace kiln {

std::shared_ptr<DeviceMemory> Device::wrap(uintptr_t, size_t, std::shared_ptr<void>) {
    fail(
        "{} ({}): memory of another library cannot be used in place on the {} backend; "
        "expected memory on the CPU or a CUDA device (copy the data in, e.g. kiln.tensor)",
        info().id, info().name, name(info().backend));
}

uintptr_t Device::address(const DeviceMemory&) {
    fail(
        "{} ({}): {} memory has no address another library can use; expected a tensor on the "
        "CPU or a CUDA device (move it there, or copy it out)",
        info().id, info().name, name(info().backend));
}

}  // namespace kiln
