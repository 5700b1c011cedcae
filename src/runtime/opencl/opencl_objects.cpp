// OpenClModule's kernel table: one cl_kernel per entry, created on first launch.
#include "runtime/opencl/opencl_objects.hpp"

#include "kiln/error.hpp"
#include "runtime/opencl/cl_check.hpp"

namespace kiln::runtime::opencl {

const OpenClModule::Kernel& OpenClModule::kernel(const std::string& entry, cl_device_id device) {
    auto found = kernels_.find(entry);
    if (found != kernels_.end()) return found->second;
    cl_int rc = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program_, entry.c_str(), &rc);
    if (rc == CL_INVALID_KERNEL_NAME) {
        fail("OpenCL launch: the module has no kernel named '{}'", entry);
    }
    check(rc, "clCreateKernel");
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
