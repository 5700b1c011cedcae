// kiln-opencl-probe: builds OpenCL C sources for one device and returns the driver's program
// binaries, so that kiln can run a driver's compiler (PoCL's can abort the process on some kernels)
// in a child process: a crash ends this program, not the user's. It builds one source after
// another, so the driver and its compiler start once per kiln process
// (runtime/opencl/isolated_build.hpp):
//   kiln-opencl-probe --serve PLATFORM DEVICE DRIVER_VERSION
// PLATFORM, DEVICE and DRIVER_VERSION are CL_PLATFORM_NAME, CL_DEVICE_NAME and CL_DRIVER_VERSION
// of the device. Each request on stdin is the build options and the source, each a 64-bit
// length (host byte order) and its bytes; each reply on stdout a 32-bit status and a 64-bit
// length with its bytes: 0 built (CL_PROGRAM_BINARIES, empty when the driver keeps none), 2
// CL_BUILD_PROGRAM_FAILURE (the build log), 3 anything else (a message). It exits 0 when stdin
// ends, 3 (a message on stderr) when the device is not found. Anything else the driver prints
// goes to stderr.
// Fetching the binary makes PoCL compile every kernel's work-group function, which is where its
// kernel compiler runs.
#include <CL/cl.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
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

// One build: the status (0, 2 or 3 as above) and the binary, log or message.
struct Built {
    int status = 0;
    std::string bytes;
};

Built build(cl_context context, cl_device_id device, const std::string& options,
            const std::string& source) {
    cl_int rc = CL_SUCCESS;
    const char* text = source.c_str();
    const size_t length = source.size();
    cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &rc);
    if (rc != CL_SUCCESS) return {3, "clCreateProgramWithSource failed: " + std::to_string(rc)};
    Built built;
    rc = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
    if (rc != CL_SUCCESS) {
        size_t size = 0;
        std::string log;
        if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) ==
                CL_SUCCESS &&
            size > 0) {
            log.resize(size);
            clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
        }
        while (!log.empty() && log.back() == '\0') log.pop_back();
        built = {rc == CL_BUILD_PROGRAM_FAILURE ? 2 : 3,
                 log + "\nclBuildProgram failed: " + std::to_string(rc)};
    } else {
        size_t size = 0;
        rc = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr);
        built.bytes.resize(size);
        if (rc == CL_SUCCESS && size > 0) {
            auto* out = reinterpret_cast<unsigned char*>(built.bytes.data());
            rc = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(out), &out, nullptr);
        }
        if (rc != CL_SUCCESS) built = {3, "clGetProgramInfo failed: " + std::to_string(rc)};
    }
    clReleaseProgram(program);
    return built;
}

bool read_exactly(int fd, void* data, size_t size) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t got = ::read(fd, p, size);
        if (got <= 0) return false;
        p += got;
        size -= static_cast<size_t>(got);
    }
    return true;
}

bool write_exactly(int fd, const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t put = ::write(fd, p, size);
        if (put <= 0) return false;
        p += put;
        size -= static_cast<size_t>(put);
    }
    return true;
}

bool read_field(int fd, std::string& field) {
    uint64_t size = 0;
    if (!read_exactly(fd, &size, sizeof size)) return false;
    field.resize(size);
    return read_exactly(fd, field.data(), field.size());
}

int serve(cl_device_id device) {
    // Replies go to the original stdout; whatever the driver prints, to stderr.
    const int replies = ::dup(1);
    if (replies < 0 || ::dup2(2, 1) < 0) return fail("cannot set up the reply channel");
    cl_int rc = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateContext failed: " + std::to_string(rc));
    std::string options, source;
    while (read_field(0, options) && read_field(0, source)) {
        const Built built = build(context, device, options, source);
        const uint32_t status = static_cast<uint32_t>(built.status);
        const uint64_t size = built.bytes.size();
        if (!write_exactly(replies, &status, sizeof status) ||
            !write_exactly(replies, &size, sizeof size) ||
            !write_exactly(replies, built.bytes.data(), built.bytes.size()))
            return fail("cannot write a reply");
    }
    clReleaseContext(context);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5 || std::string(argv[1]) != "--serve")
        return fail("usage: kiln-opencl-probe --serve PLATFORM DEVICE DRIVER_VERSION");
    cl_device_id device = find_device(argv[2], argv[3], argv[4]);
    if (device == nullptr)
        return fail(std::string("no device '") + argv[3] + "' (driver " + argv[4] +
                    ") on platform '" + argv[2] + "'");
    return serve(device);
}
