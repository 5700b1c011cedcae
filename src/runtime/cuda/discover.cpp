// discover_cuda: finds the NVIDIA GPUs the driver reports, or says why there are none. Never
// throws: a machine without libcuda, without a GPU or without NVRTC gets a reason instead.
#include <fmt/format.h>

#include "kiln/error.hpp"
#include "runtime/discover.hpp"

#ifdef KILN_HAVE_CUDA_HEADERS
#include "runtime/cuda/cuda_device.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/nvrtc.hpp"
#endif

namespace kiln::runtime {

std::vector<std::unique_ptr<Device>> discover_cuda(std::string* reason) {
    std::vector<std::unique_ptr<Device>> devices;
    auto unavailable = [&](const std::string& why) {
        if (reason != nullptr) *reason = "CUDA unavailable: " + why;
        return std::vector<std::unique_ptr<Device>>{};
    };
#ifndef KILN_HAVE_CUDA_HEADERS
    return unavailable("kiln was built without the CUDA toolkit headers");
#else
    std::string why;
    const cuda::DriverApi* api = cuda::driver_api(&why);
    if (api == nullptr) {
        if (reason != nullptr) *reason = why;  // already "CUDA unavailable: ..."
        return devices;
    }
    int count = 0;
    if (CUresult r = api->cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
        return unavailable("cuDeviceGetCount failed: " + cuda::describe(r));
    }
    if (count <= 0) return unavailable("no CUDA devices");
    if (!cuda::nvrtc_available(&why)) return unavailable(why);

    std::string skipped;
    for (int i = 0; i < count; ++i) {
        try {
            devices.push_back(std::make_unique<cuda::CudaDevice>(i));
        } catch (const Error& e) {
            const std::string message = fmt::format("CUDA device {} skipped: {}", i, e.what());
            warn_once(message, message);
            skipped += (skipped.empty() ? "" : "; ") + message;
        }
    }
    if (devices.empty()) return unavailable(skipped);
    if (reason != nullptr) reason->clear();
    return devices;
#endif
}

}  // namespace kiln::runtime
