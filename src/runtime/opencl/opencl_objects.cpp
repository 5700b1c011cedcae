// OpenClModule's kernel table: one cl_kernel per entry, created on first launch.
#include "runtime/opencl/opencl_objects.hpp"

#include "kiln/error.hpp"
#include "runtime/opencl/cl_check.hpp"

namespace kiln::runtime::opencl {

namespace {

cl_kernel create_kernel(cl_program program, const std::string& entry) {
    cl_int rc = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program, entry.c_str(), &rc);
    if (rc == CL_INVALID_KERNEL_NAME) {
        fail("OpenCL launch: the module has no kernel named '{}'", entry);
    }
    check(rc, "clCreateKernel");
    return k;
}

}  // namespace

void OpenClModule::require_entry(const std::string& entry) {
    std::lock_guard lock(mutex_);
    if (!kernels_.count(entry)) clReleaseKernel(create_kernel(program_, entry));
}

const OpenClModule::Kernel& OpenClModule::kernel(const std::string& entry, cl_device_id device) {
    auto found = kernels_.find(entry);
    if (found != kernels_.end()) return found->second;
    cl_kernel k = create_kernel(program_, entry);
    Kernel entry_info{k, 0, 0};
    cl_int rc1 = clGetKernelWorkGroupInfo(k, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(size_t),
                                          &entry_info.work_group_size, nullptr);
    cl_int rc2 =
        clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(cl_uint), &entry_info.num_args, nullptr);
    if (rc1 != CL_SUCCESS || rc2 != CL_SUCCESS) {
        clReleaseKernel(k);
        check(rc1, "clGetKernelWorkGroupInfo");
        check(rc2, "clGetKernelInfo");
    }
    return kernels_.emplace(entry, entry_info).first->second;
}

}  // namespace kiln::runtime::opencl
