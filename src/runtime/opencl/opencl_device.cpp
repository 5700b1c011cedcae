// OpenClDevice: memory, program build and load, kernel launch and event-based timing on one
// OpenCL device through the ICD loader's C API.
#include "runtime/opencl/opencl_device.hpp"

#include <CL/cl_ext.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>

#include "kiln/error.hpp"
#include "runtime/opencl/binary_format.hpp"
#include "runtime/opencl/cl_check.hpp"
#include "runtime/opencl/cl_info.hpp"
#include "runtime/opencl/opencl_objects.hpp"

namespace kiln::runtime::opencl {
namespace {

static_assert(std::endian::native == std::endian::little,
              "KernelArg scalars are passed by address of their little-endian bits");

const OpenClMemory& own(const DeviceMemory& memory, cl_context context, const char* what) {
    auto* m = dynamic_cast<const OpenClMemory*>(&memory);
    if (m == nullptr || m->context() != context) {
        fail("OpenCL {}: the memory was not allocated by this OpenCL device", what);
    }
    return *m;
}

void check_range(const DeviceMemory& memory, size_t offset, size_t bytes, const char* what) {
    if (offset > memory.bytes() || bytes > memory.bytes() - offset) {
        fail("OpenCL {} of {} bytes at offset {} is out of range of a {}-byte buffer", what, bytes,
             offset, memory.bytes());
    }
}

std::string device_type_name(cl_device_type type) {
    if (type & CL_DEVICE_TYPE_GPU) return "GPU";
    if (type & CL_DEVICE_TYPE_CPU) return "CPU";
    if (type & CL_DEVICE_TYPE_ACCELERATOR) return "ACCELERATOR";
    return "CUSTOM";
}

// Every character outside [A-Za-z0-9._-] becomes '_'.
std::string sanitize_id(std::string text) {
    for (char& c : text) {
        bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        if (!ok) c = '_';
    }
    return text;
}

// The platform's short name: its ICD suffix ("POCL", "NV", "AMD"), else the first word of its
// name, lower-cased.
std::string platform_short_name(cl_platform_id platform, const std::string& platform_name) {
    std::string shortname;
    size_t size = 0;
    if (clGetPlatformInfo(platform, CL_PLATFORM_ICD_SUFFIX_KHR, 0, nullptr, &size) == CL_SUCCESS &&
        size > 1) {
        shortname = platform_string(platform, CL_PLATFORM_ICD_SUFFIX_KHR);
    }
    if (shortname.empty()) shortname = platform_name.substr(0, platform_name.find(' '));
    if (shortname.empty()) shortname = "unknown";
    for (char& c : shortname) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return shortname;
}

uint64_t profiling(cl_event event, cl_profiling_info param) {
    cl_ulong value = 0;
    check(clGetEventProfilingInfo(event, param, sizeof(value), &value, nullptr),
          "clGetEventProfilingInfo");
    return value;
}

}  // namespace

OpenClDevice::OpenClDevice(cl_platform_id platform, cl_device_id device) : device_(device) {
    std::string platform_name = platform_string(platform, CL_PLATFORM_NAME);
    std::string platform_version = platform_string(platform, CL_PLATFORM_VERSION);
    std::string device_name = device_string(device, CL_DEVICE_NAME);
    std::string driver_version = device_string(device, CL_DRIVER_VERSION);
    std::string c_version = device_string(device, CL_DEVICE_OPENCL_C_VERSION);

    info_.backend = Backend::opencl;
    info_.name = device_name;
    const auto type = device_value<cl_device_type>(device, CL_DEVICE_TYPE);
    info_.arch = device_type_name(type) + " " + device_string(device, CL_DEVICE_VERSION);
    info_.driver = platform_name + " " + driver_version;
    info_.compiler = c_version;
    info_.memory_bytes = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
    info_.compute_units =
        static_cast<int>(device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS));
    info_.warp_size = 1;
    info_.simt = (type & CL_DEVICE_TYPE_GPU) != 0;
    const std::string short_name = platform_short_name(platform, platform_name);
    info_.id = sanitize_id("opencl-" + short_name + "-" + device_name + "-" + driver_version);
    toolchain_id_ = fmt::format("opencl|{} {}|{}|{}|{}|{}", platform_name, platform_version,
                                device_name, driver_version, c_version, build_options);
    platform_short_name_ = short_name;
    unoptimized_build_ = short_name == "pocl" && driver_version.rfind("3.", 0) == 0;
    isolated_target_ = {platform_name, device_name, driver_version, info_.id, toolchain_id_};

    max_work_group_size_ = device_value<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    auto dims = device_value<cl_uint>(device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
    if (dims > 0) {
        std::vector<size_t> sizes(dims);
        check(clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(size_t) * dims,
                              sizes.data(), nullptr),
              "clGetDeviceInfo");
        max_work_group_size_ = std::min(max_work_group_size_, sizes[0]);
    }
    max_alloc_bytes_ = device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);

    cl_int rc = CL_SUCCESS;
    context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &rc);
    check(rc, "clCreateContext");
    queue_ = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (rc != CL_SUCCESS) {
        clReleaseContext(context_);
        check(rc, "clCreateCommandQueue");
    }
}

OpenClDevice::~OpenClDevice() {
    clFinish(queue_);
    clReleaseCommandQueue(queue_);
    clReleaseContext(context_);
}

// ---- memory ----

std::shared_ptr<DeviceMemory> OpenClDevice::allocate(size_t bytes) {
    if (bytes > max_alloc_bytes_) {
        fail("OpenCL allocation of {} bytes exceeds {}'s largest allocation of {} bytes", bytes,
             info_.name, max_alloc_bytes_);
    }
    cl_int rc = CL_SUCCESS;
    cl_mem mem =
        clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &rc);
    if (rc != CL_SUCCESS) {
        fail("OpenCL clCreateBuffer of {} bytes failed: {}", bytes, cl_error_text(rc));
    }
    return std::make_shared<OpenClMemory>(mem, bytes, context_);
}

void OpenClDevice::write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) {
    const OpenClMemory& m = own(dst, context_, "write");
    check_range(dst, offset, bytes, "write");
    if (bytes == 0) return;
    cl_event event = nullptr;
    check(clEnqueueWriteBuffer(queue_, m.mem(), CL_TRUE, offset, bytes, src, 0, nullptr,
                               event_slot(event)),
          "clEnqueueWriteBuffer");
    record(event);
}

void OpenClDevice::read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) {
    const OpenClMemory& m = own(src, context_, "read");
    check_range(src, offset, bytes, "read");
    if (bytes == 0) return;
    cl_event event = nullptr;
    check(clEnqueueReadBuffer(queue_, m.mem(), CL_TRUE, offset, bytes, dst, 0, nullptr,
                              event_slot(event)),
          "clEnqueueReadBuffer");
    record(event);
}

void OpenClDevice::fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) {
    const OpenClMemory& m = own(dst, context_, "fill");
    if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8) {
        fail("OpenCL fill: pattern of {} bytes; expected 1, 2, 4 or 8", pattern_bytes);
    }
    size_t whole = dst.bytes() - dst.bytes() % pattern_bytes;
    if (whole > 0) {
        cl_event event = nullptr;
        check(clEnqueueFillBuffer(queue_, m.mem(), pattern, pattern_bytes, 0, whole, 0, nullptr,
                                  event_slot(event)),
              "clEnqueueFillBuffer");
        record(event);
    }
    // A size that is not a multiple of the pattern ends in a prefix of the pattern.
    if (whole < dst.bytes()) write(dst, whole, pattern, dst.bytes() - whole);
}

void OpenClDevice::copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) {
    const OpenClMemory& d = own(dst, context_, "copy");
    const OpenClMemory& s = own(src, context_, "copy");
    if (bytes > dst.bytes() || bytes > src.bytes()) {
        fail("OpenCL copy of {} bytes is out of range: source holds {} bytes, destination {}",
             bytes, src.bytes(), dst.bytes());
    }
    if (bytes == 0 || d.mem() == s.mem()) return;  // copying a buffer onto itself changes nothing
    cl_event event = nullptr;
    check(clEnqueueCopyBuffer(queue_, s.mem(), d.mem(), 0, 0, bytes, 0, nullptr, event_slot(event)),
          "clEnqueueCopyBuffer");
    record(event);
}

// ---- compile and load ----

void OpenClDevice::build(cl_program program, std::string_view what, const std::string& options) {
    cl_int rc = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
    if (rc == CL_SUCCESS) return;
    std::string log;
    size_t size = 0;
    if (clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) ==
            CL_SUCCESS &&
        size > 0) {
        log.resize(size);
        clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
        while (!log.empty() && log.back() == '\0') log.pop_back();
    }
    clReleaseProgram(program);
    fail("OpenCL build of {} for {} failed: {}\nbuild log:\n{}", what, info_.name,
         cl_error_text(rc), log.empty() ? "(empty)" : log);
}

std::vector<uint8_t> OpenClDevice::payload(const std::string& source,
                                           std::span<const uint8_t> binary) {
    if (binary.empty()) {
        // The driver keeps no binary: store the source; load() rebuilds it.
        auto text = std::span(reinterpret_cast<const uint8_t*>(source.data()), source.size());
        return wrap_payload(PayloadKind::source, text);
    }
    return wrap_payload(PayloadKind::driver_binary, binary);
}

std::vector<uint8_t> OpenClDevice::compile(const std::string& source) {
    return compile_with(source, std::string(build_options));
}

std::vector<uint8_t> OpenClDevice::compile_unoptimized(const std::string& source) {
    return compile_with(source, fmt::format("{} -cl-opt-disable", build_options));
}

std::vector<uint8_t> OpenClDevice::compile_with(const std::string& source,
                                                const std::string& options) {
    if (isolate_builds(platform_short_name_))
        if (auto binary = build_isolated(isolated_target_, source, options))
            return payload(source, *binary);
    const char* text = source.c_str();
    size_t length = source.size();
    cl_int rc = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &rc);
    check(rc, "clCreateProgramWithSource");
    build(program, "OpenCL C source", options);  // releases the program when it throws

    size_t size = 0;
    rc = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr);
    std::vector<uint8_t> binary(size);
    if (rc == CL_SUCCESS && size > 0) {
        unsigned char* out = binary.data();
        rc = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(out), &out, nullptr);
    }
    clReleaseProgram(program);
    check(rc, "clGetProgramInfo");
    return payload(source, binary);
}

std::unique_ptr<Module> OpenClDevice::load(std::span<const uint8_t> binary) {
    Payload payload = unwrap_payload(binary);
    cl_int rc = CL_SUCCESS;
    cl_program program = nullptr;
    bool is_source = payload.kind == PayloadKind::source;
    if (is_source) {
        auto* text = reinterpret_cast<const char*>(payload.bytes.data());
        size_t length = payload.bytes.size();
        program = clCreateProgramWithSource(context_, 1, &text, &length, &rc);
        check(rc, "clCreateProgramWithSource");
    } else {
        const unsigned char* bytes = payload.bytes.data();
        size_t size = payload.bytes.size();
        cl_int status = CL_SUCCESS;
        program = clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &status, &rc);
        if (rc == CL_SUCCESS && status != CL_SUCCESS) rc = status;
        if (rc != CL_SUCCESS) {
            if (program != nullptr) clReleaseProgram(program);
            fail("OpenCL load: {} rejected the {}-byte program binary: {}", info_.name, size,
                 cl_error_text(rc));
        }
    }
    build(program, is_source ? "OpenCL C source" : "a program binary", std::string(build_options));
    return std::make_unique<OpenClModule>(program, context_);
}

// ---- launch ----

void OpenClDevice::launch(Module& module, const std::string& entry, int64_t grid, int block,
                          std::span<const KernelArg> args) {
    auto* m = dynamic_cast<OpenClModule*>(&module);
    if (m == nullptr || m->context() != context_) {
        fail("OpenCL launch of '{}': the module was not loaded by this OpenCL device", entry);
    }
    if (grid < 0) fail("OpenCL launch of '{}': grid {} is negative", entry, grid);
    if (block < 1) fail("OpenCL launch of '{}': block {} must be at least 1", entry, block);
    if (static_cast<uint64_t>(grid) > std::numeric_limits<size_t>::max() / block) {
        fail("OpenCL launch of '{}': grid {} x block {} overflows the global size", entry, grid,
             block);
    }
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].memory != nullptr) {
            own(*args[i].memory, context_, "launch");
        } else if (args[i].size != 1 && args[i].size != 2 && args[i].size != 4 &&
                   args[i].size != 8) {
            fail("OpenCL launch of '{}': scalar argument {} is {} bytes; expected 1, 2, 4 or 8",
                 entry, i, args[i].size);
        }
    }

    std::lock_guard lock(m->mutex());
    const auto& k = m->kernel(entry, device_);
    if (static_cast<size_t>(block) > std::min(k.work_group_size, max_work_group_size_)) {
        fail(
            "OpenCL launch of '{}': block {} exceeds the work-group limit (device maximum {}, "
            "kernel maximum {})",
            entry, block, max_work_group_size_, k.work_group_size);
    }
    if (args.size() != k.num_args) {
        fail("OpenCL launch of '{}': {} arguments given; the kernel takes {}", entry, args.size(),
             k.num_args);
    }
    if (grid == 0) return;
    for (size_t i = 0; i < args.size(); ++i) {
        cl_int rc;
        if (args[i].memory != nullptr) {
            cl_mem mem = static_cast<const OpenClMemory*>(args[i].memory)->mem();
            rc = clSetKernelArg(k.kernel, static_cast<cl_uint>(i), sizeof(cl_mem), &mem);
        } else {
            rc = clSetKernelArg(k.kernel, static_cast<cl_uint>(i), args[i].size, &args[i].scalar);
        }
        if (rc != CL_SUCCESS) {
            fail("OpenCL launch of '{}': argument {} ({}) was rejected: {}", entry, i,
                 args[i].memory != nullptr ? "buffer" : fmt::format("{}-byte scalar", args[i].size),
                 cl_error_text(rc));
        }
    }
    size_t global = static_cast<size_t>(grid) * static_cast<size_t>(block);
    size_t local = static_cast<size_t>(block);
    cl_event event = nullptr;
    check(clEnqueueNDRangeKernel(queue_, k.kernel, 1, nullptr, &global, &local, 0, nullptr,
                                 event_slot(event)),
          "clEnqueueNDRangeKernel");
    record(event);
    check(clFlush(queue_), "clFlush");
}

void OpenClDevice::synchronize() {
    check(clFinish(queue_), "clFinish");
}

// ---- timing ----
//
// time_ms() sums CL_PROFILING_COMMAND_END - START over the commands (launches, fills, copies,
// reads, writes) that the calling thread enqueues inside `work`: summed event durations count
// only device execution (commands on the in-order queue never overlap), where marker events
// around `work` would also count host time between commands (PoCL's kernel compiles for a new
// local size among it; notes/design-history-2026-12-04.md), and they work on drivers whose
// markers carry no timestamps.

cl_event* OpenClDevice::event_slot(cl_event& slot) {
    std::lock_guard lock(regions_mutex_);
    auto self = std::this_thread::get_id();
    for (TimingRegion* region : regions_) {
        if (region->thread == self) return &slot;
    }
    return nullptr;
}

void OpenClDevice::record(cl_event event) {
    if (event == nullptr) return;
    {
        std::lock_guard lock(regions_mutex_);
        auto self = std::this_thread::get_id();
        for (TimingRegion* region : regions_) {
            if (region->thread != self) continue;
            clRetainEvent(event);
            region->events.push_back(event);
        }
    }
    clReleaseEvent(event);
}

// Opens a timing region for the calling thread; closing it releases the region's events.
class TimingScope {
  public:
    TimingScope(OpenClDevice& device, OpenClDevice::TimingRegion& region)
        : device_(device), region_(region) {
        std::lock_guard lock(device_.regions_mutex_);
        device_.regions_.push_back(&region_);
    }
    ~TimingScope() {
        {
            std::lock_guard lock(device_.regions_mutex_);
            std::erase(device_.regions_, &region_);
        }
        for (cl_event event : region_.events) clReleaseEvent(event);
    }
    TimingScope(const TimingScope&) = delete;
    TimingScope& operator=(const TimingScope&) = delete;

  private:
    OpenClDevice& device_;
    OpenClDevice::TimingRegion& region_;
};

double OpenClDevice::time_ms(const std::function<void()>& work) {
    TimingRegion region{std::this_thread::get_id(), {}};
    TimingScope scope(*this, region);
    work();
    check(clFinish(queue_), "clFinish");
    uint64_t total_ns = 0;
    for (cl_event event : region.events) {
        uint64_t start = profiling(event, CL_PROFILING_COMMAND_START);
        uint64_t end = profiling(event, CL_PROFILING_COMMAND_END);
        if (end > start) total_ns += end - start;
    }
    return static_cast<double>(total_ns) / 1e6;
}

}  // namespace kiln::runtime::opencl
