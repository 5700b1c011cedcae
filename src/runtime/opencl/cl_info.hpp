// Typed reads of OpenCL platform and device info (clGetPlatformInfo / clGetDeviceInfo), throwing
// kiln::Error on failure.
#pragma once

#include <CL/cl.h>

#include <string>

#include "runtime/opencl/cl_check.hpp"

namespace kiln::runtime::opencl {

inline std::string platform_string(cl_platform_id platform, cl_platform_info param) {
    size_t size = 0;
    check(clGetPlatformInfo(platform, param, 0, nullptr, &size), "clGetPlatformInfo");
    std::string text(size, '\0');
    check(clGetPlatformInfo(platform, param, size, text.data(), nullptr), "clGetPlatformInfo");
    while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
    return text;
}

inline std::string device_string(cl_device_id device, cl_device_info param) {
    size_t size = 0;
    check(clGetDeviceInfo(device, param, 0, nullptr, &size), "clGetDeviceInfo");
    std::string text(size, '\0');
    check(clGetDeviceInfo(device, param, size, text.data(), nullptr), "clGetDeviceInfo");
    while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
    return text;
}

template <typename T>
T device_value(cl_device_id device, cl_device_info param) {
    T value{};
    check(clGetDeviceInfo(device, param, sizeof(T), &value, nullptr), "clGetDeviceInfo");
    return value;
}

}  // namespace kiln::runtime::opencl
