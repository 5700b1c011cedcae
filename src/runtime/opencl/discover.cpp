// discover_opencl(): every usable device of every OpenCL platform the ICD loader knows, skipping
// (with a reason) devices that are unavailable or lack correctly rounded divide and sqrt.
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <vector>

#include "kiln/error.hpp"
#include "runtime/discover.hpp"
#include "runtime/opencl/cl_check.hpp"
#include "runtime/opencl/cl_info.hpp"
#include "runtime/opencl/opencl_device.hpp"

namespace kiln::runtime {
namespace {

constexpr const char* no_platform =
    "OpenCL unavailable: no OpenCL platform found (install an ICD such as pocl-opencl-icd)";

// Why `device` cannot run kiln kernels, or "" when it can.
std::string unusable_because(cl_device_id device) {
    using opencl::device_value;
    if (!device_value<cl_bool>(device, CL_DEVICE_AVAILABLE)) return "the device is not available";
    if (!device_value<cl_bool>(device, CL_DEVICE_COMPILER_AVAILABLE)) {
        return "the device has no OpenCL C compiler";
    }
    auto fp = device_value<cl_device_fp_config>(device, CL_DEVICE_SINGLE_FP_CONFIG);
    if (!(fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)) {
        return "the device lacks correctly rounded f32 divide and sqrt "
               "(CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT), which kiln's numerical law requires";
    }
    return "";
}

}  // namespace

// `reason` receives why no device was found; when some were, it lists the devices skipped
// ("" when none were).
std::vector<std::unique_ptr<Device>> discover_opencl(std::string* reason) {
    std::vector<std::unique_ptr<Device>> devices;
    std::vector<std::string> skipped;

    cl_uint platform_count = 0;
    cl_int rc = clGetPlatformIDs(0, nullptr, &platform_count);
    if (rc == CL_PLATFORM_NOT_FOUND_KHR || (rc == CL_SUCCESS && platform_count == 0)) {
        if (reason) *reason = no_platform;
        return devices;
    }
    if (rc != CL_SUCCESS) {
        if (reason)
            *reason = "OpenCL unavailable: clGetPlatformIDs failed: " + opencl::cl_error_text(rc);
        return devices;
    }
    std::vector<cl_platform_id> platforms(platform_count);
    rc = clGetPlatformIDs(platform_count, platforms.data(), nullptr);
    if (rc != CL_SUCCESS) {
        if (reason)
            *reason = "OpenCL unavailable: clGetPlatformIDs failed: " + opencl::cl_error_text(rc);
        return devices;
    }

    for (cl_platform_id platform : platforms) {
        std::string platform_name = "an OpenCL platform";
        try {
            platform_name = opencl::platform_string(platform, CL_PLATFORM_NAME);
            cl_uint count = 0;
            rc = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
            if (rc == CL_DEVICE_NOT_FOUND || (rc == CL_SUCCESS && count == 0)) {
                skipped.push_back(platform_name + ": no devices");
                continue;
            }
            opencl::check(rc, "clGetDeviceIDs");
            std::vector<cl_device_id> ids(count);
            opencl::check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr),
                          "clGetDeviceIDs");
            for (cl_device_id id : ids) {
                std::string device_name = "a device";
                try {
                    device_name = opencl::device_string(id, CL_DEVICE_NAME);
                    std::string why = unusable_because(id);
                    if (!why.empty()) {
                        skipped.push_back(platform_name + " / " + device_name + ": " + why);
                        continue;
                    }
                    devices.push_back(std::make_unique<opencl::OpenClDevice>(platform, id));
                } catch (const Error& e) {
                    skipped.push_back(platform_name + " / " + device_name + ": " + e.what());
                }
            }
        } catch (const Error& e) {
            skipped.push_back(platform_name + ": " + e.what());
        }
    }

    if (reason) {
        std::string text;
        for (const auto& s : skipped) text += (text.empty() ? "" : "; ") + s;
        if (devices.empty()) {
            *reason =
                "OpenCL unavailable: no usable device" + (text.empty() ? "" : " (" + text + ")");
        } else {
            *reason = text.empty() ? "" : "OpenCL devices skipped: " + text;
        }
    }
    return devices;
}

}  // namespace kiln::runtime
