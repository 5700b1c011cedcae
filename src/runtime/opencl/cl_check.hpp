// OpenCL error handling: names for cl_int status codes and check(), which turns a failed call
// into a kiln::Error such as "OpenCL clCreateBuffer failed: CL_OUT_OF_RESOURCES (-5)".
#pragma once

#include <CL/cl.h>

#include <string>

namespace kiln::runtime::opencl {

// The symbolic name of an OpenCL status code ("CL_INVALID_VALUE"), or "unknown OpenCL error".
const char* cl_error_name(cl_int code);

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_text(cl_int code);

// Throws kiln::Error naming `call` and the status when `code` is not CL_SUCCESS.
void check(cl_int code, const char* call);

}  // namespace kiln::runtime::opencl
