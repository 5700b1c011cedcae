// NVRTC, loaded with dlopen at run time: compiles generated CUDA C to a cubin for one GPU
// architecture. Usable without any GPU (CI compiles every CUDA kernel this way).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cuda {

// Whether NVRTC could be loaded; sets *reason ("NVRTC not found: ...") when not.
bool nvrtc_available(std::string* reason);

// NVRTC's version, "13.0"; throws kiln::Error when NVRTC is unavailable.
std::string nvrtc_version();

// The options every compilation uses for `arch` ("sm_90"): strict IEEE float, no fast math.
std::vector<std::string> nvrtc_options(const std::string& arch);

// Compiles `source` for `arch` ("sm_90") and returns the cubin. Stores NVRTC's log (warnings)
// in *log when given. Throws kiln::Error carrying the full log when compilation fails.
std::vector<uint8_t> nvrtc_compile(const std::string& source, const std::string& arch,
                                   std::string* log);

}  // namespace kiln::cuda
