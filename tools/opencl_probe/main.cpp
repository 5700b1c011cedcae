// kiln-opencl-probe: builds one OpenCL C source for one device and writes the driver's program
// binary, so that kiln can run a driver's compiler (PoCL's can abort the process on some kernels)
// in a child process: a crash ends this program, not the user's.
//   kiln-opencl-probe PLATFORM DEVICE DRIVER_VERSION OPTIONS SOURCE_FILE BINARY_FILE
// PLATFORM, DEVICE and DRIVER_VERSION are CL_PLATFORM_NAME, CL_DEVICE_NAME and CL_DRIVER_VERSION
// of the device. Exit status: 0 built (BINARY_FILE holds CL_PROGRAM_BINARIES, empty when the
// driver keeps none); 2 CL_BUILD_PROGRAM_FAILURE (the build log on stderr); 3 anything else (a
// message on stderr). Fetching the binary makes PoCL compile every kernel's work-group function,
// which is where its kernel compiler runs.
#include <CL/cl.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::string info_string(cl_int (*get)(void*, cl_uint, size_t, void*, size_t*), void* object,
                        cl_uint param) {
    size_t size = 0;
    if (get(object, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
    std::string text(size, '\0');
    if (get(object, param, size, text.data(), nullptr) != CL_SUCCESS) return "";
    while (!text.empty() && text.back() == '\0') text.pop_back();
    return text;
}

cl_int platform_info(void* p, cl_uint param, size_t size, void* value, size_t* ret) {
    return clGetPlatformInfo(static_cast<cl_platform_id>(p), param, size, value, ret);
}
cl_int device_info(void* d, cl_uint param, size_t size, void* value, size_t* ret) {
    return clGetDeviceInfo(static_cast<cl_device_id>(d), param, size, value, ret);
}

int fail(const std::string& message, int status = 3) {
    std::fprintf(stderr, "kiln-opencl-probe: %s\n", message.c_str());
    return status;
}

// The device whose platform name, device name and driver version are these; null if none.
cl_device_id find_device(const std::string& platform_name, const std::string& device_name,
                         const std::string& driver) {
    cl_uint platform_count = 0;
    if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS) return nullptr;
    std::vector<cl_platform_id> platforms(platform_count);
    if (clGetPlatformIDs(platform_count, platforms.data(), nullptr) != CL_SUCCESS) return nullptr;
    for (cl_platform_id p : platforms) {
        if (info_string(platform_info, p, CL_PLATFORM_NAME) != platform_name) continue;
        cl_uint count = 0;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
        std::vector<cl_device_id> ids(count);
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr) != CL_SUCCESS)
            continue;
        for (cl_device_id d : ids)
            if (info_string(device_info, d, CL_DEVICE_NAME) == device_name &&
                info_string(device_info, d, CL_DRIVER_VERSION) == driver)
                return d;
    }
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7)
        return fail(
            "usage: kiln-opencl-probe PLATFORM DEVICE DRIVER_VERSION OPTIONS SOURCE_FILE "
            "BINARY_FILE");
    cl_device_id device = find_device(argv[1], argv[2], argv[3]);
    if (device == nullptr)
        return fail(std::string("no device '") + argv[2] + "' (driver " + argv[3] +
                    ") on platform '" + argv[1] + "'");
    std::ifstream in(argv[5], std::ios::binary);
    const std::string source((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return fail(std::string("cannot read ") + argv[5]);

    cl_int rc = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateContext failed: " + std::to_string(rc));
    const char* text = source.c_str();
    const size_t length = source.size();
    cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateProgramWithSource failed: " + std::to_string(rc));
    rc = clBuildProgram(program, 1, &device, argv[4], nullptr, nullptr);
    if (rc != CL_SUCCESS) {
        size_t size = 0;
        std::string log;
        if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) ==
                CL_SUCCESS &&
            size > 0) {
            log.resize(size);
            clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
        }
        std::fprintf(stderr, "%s\n", log.c_str());
        return fail("clBuildProgram failed: " + std::to_string(rc),
                    rc == CL_BUILD_PROGRAM_FAILURE ? 2 : 3);
    }
    size_t size = 0;
    rc = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr);
    std::vector<unsigned char> binary(size);
    if (rc == CL_SUCCESS && size > 0) {
        unsigned char* out = binary.data();
        rc = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(out), &out, nullptr);
    }
    if (rc != CL_SUCCESS) return fail("clGetProgramInfo failed: " + std::to_string(rc));
    std::ofstream out(argv[6], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(binary.data()), static_cast<std::streamsize>(size));
    out.close();
    if (!out) return fail(std::string("cannot write ") + argv[6]);
    clReleaseProgram(program);
    clReleaseContext(context);
    return 0;
}
