// The OpenCL runtime's memory and module objects: a cl_mem with its requested size, and a built
// cl_program with the kernels created from it so far.
#pragma once

#include <CL/cl.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/device.hpp"

namespace kiln::runtime::opencl {

class OpenClMemory final : public DeviceMemory {
  public:
    OpenClMemory(cl_mem mem, size_t bytes, cl_context context)
        : mem_(mem), bytes_(bytes), context_(context) {}
    ~OpenClMemory() override { clReleaseMemObject(mem_); }
    OpenClMemory(const OpenClMemory&) = delete;
    OpenClMemory& operator=(const OpenClMemory&) = delete;
    size_t bytes() const override { return bytes_; }
    uintptr_t handle() const override { return reinterpret_cast<uintptr_t>(mem_); }
    cl_mem mem() const { return mem_; }
    cl_context context() const { return context_; }

  private:
    cl_mem mem_;
    size_t bytes_;  // as requested; a zero-byte request holds a 1-byte buffer
    cl_context context_;
};

// A built program and the kernels created from it so far, one per entry name. `mutex` guards
// the kernel table and the set-arguments-then-enqueue sequence, since a cl_kernel's arguments
// are shared state.
class OpenClModule final : public Module {
  public:
    struct Kernel {
        cl_kernel kernel = nullptr;
        size_t work_group_size = 0;  // CL_KERNEL_WORK_GROUP_SIZE on this device
        cl_uint num_args = 0;
    };
    OpenClModule(cl_program program, cl_context context) : program_(program), context_(context) {}
    ~OpenClModule() override {
        for (auto& [name, k] : kernels_) clReleaseKernel(k.kernel);
        clReleaseProgram(program_);
    }
    OpenClModule(const OpenClModule&) = delete;
    OpenClModule& operator=(const OpenClModule&) = delete;

    cl_context context() const { return context_; }
    std::mutex& mutex() { return mutex_; }

    // The kernel for `entry`, created on first use. Call with mutex() held.
    const Kernel& kernel(const std::string& entry, cl_device_id device);
    void require_entry(const std::string& entry) override;

  private:
    cl_program program_;
    cl_context context_;
    std::mutex mutex_;
    std::unordered_map<std::string, Kernel> kernels_;
};

}  // namespace kiln::runtime::opencl
