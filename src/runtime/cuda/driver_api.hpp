// The CUDA driver API, loaded from libcuda.so.1 with dlopen at run time so that one build of kiln
// runs on machines with and without a GPU. cuda.h supplies only the types and signatures.
#pragma once

#include <string>
#include <string_view>

#ifdef KILN_HAVE_CUDA_HEADERS
#include <cuda.h>

namespace kiln::cuda {

// Every driver function kiln calls. cuda.h maps several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); the members and the symbols looked up follow that mapping.
#define KILN_CUDA_DRIVER_FUNCTIONS(X) \
    X(cuGetErrorName)                 \
    X(cuGetErrorString)               \
    X(cuInit)                         \
    X(cuDriverGetVersion)             \
    X(cuDeviceGetCount)               \
    X(cuDeviceGet)                    \
    X(cuDeviceGetName)                \
    X(cuDeviceGetAttribute)           \
    X(cuDeviceTotalMem)               \
    X(cuDevicePrimaryCtxRetain)       \
    X(cuDevicePrimaryCtxRelease)      \
    X(cuCtxSetCurrent)                \
    X(cuStreamCreate)                 \
    X(cuStreamDestroy)                \
    X(cuStreamSynchronize)            \
    X(cuStreamBeginCapture)           \
    X(cuStreamEndCapture)             \
    X(cuGraphInstantiate)             \
    X(cuGraphLaunch)                  \
    X(cuGraphExecDestroy)             \
    X(cuGraphDestroy)                 \
    X(cuGraphGetNodes)                \
    X(cuGraphNodeGetType)             \
    X(cuGraphKernelNodeGetParams)     \
    X(cuGraphExecKernelNodeSetParams) \
    X(cuMemAlloc)                     \
    X(cuMemFree)                      \
    X(cuPointerGetAttribute)          \
    X(cuMemPoolCreate)                \
    X(cuMemPoolDestroy)               \
    X(cuMemPoolSetAttribute)          \
    X(cuMemPoolTrimTo)                \
    X(cuMemAllocFromPoolAsync)        \
    X(cuMemFreeAsync)                 \
    X(cuMemcpyHtoDAsync)              \
    X(cuMemcpyDtoHAsync)              \
    X(cuMemcpyDtoDAsync)              \
    X(cuMemsetD8Async)                \
    X(cuMemsetD16Async)               \
    X(cuMemsetD32Async)               \
    X(cuMemsetD2D32Async)             \
    X(cuModuleLoadData)               \
    X(cuModuleUnload)                 \
    X(cuModuleGetFunction)            \
    X(cuFuncGetAttribute)             \
    X(cuLaunchKernel)                 \
    X(cuEventCreate)                  \
    X(cuEventDestroy)                 \
    X(cuEventRecord)                  \
    X(cuEventSynchronize)             \
    X(cuEventElapsedTime)

struct DriverApi {
#define KILN_CUDA_DECLARE_MEMBER(fn) decltype(&::fn) fn = nullptr;
    KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
#undef KILN_CUDA_DECLARE_MEMBER
};

// The process's driver API: libcuda.so.1 opened, its functions found and cuInit(0) done, once.
// Returns null and sets *reason ("CUDA unavailable: ...") when any step failed.
const DriverApi* driver_api(std::string* reason);

// The loaded driver API; throws kiln::Error when it is unavailable.
const DriverApi& driver();

// Throws kiln::Error naming `what` and the driver's error name and description unless
// `result` is CUDA_SUCCESS.
void check(CUresult result, std::string_view what);

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string describe(CUresult result);

}  // namespace kiln::cuda

#endif  // KILN_HAVE_CUDA_HEADERS
