// Isolated builds: OpenCL C built by the kiln-opencl-probe helper in a child process, for drivers
// whose compiler can abort the process (PoCL's does on some kernels). A crash ends the child and
// becomes a kiln::Error naming the signal; the verdict is kept beside the kernel cache, so later
// processes fail at once instead of crashing again. The helper serves one build after another
// (the driver starts once per process and device, and again after a crash); only a kernel-cache
// miss builds, and the helper's binary is the build (nothing is built twice).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::opencl {

// What the helper needs to find the device again, and where verdicts go.
struct IsolatedTarget {
    std::string platform_name;   // CL_PLATFORM_NAME
    std::string device_name;     // CL_DEVICE_NAME
    std::string driver_version;  // CL_DRIVER_VERSION
    std::string device_id;       // kiln's device id (the kernel cache's folder)
    std::string toolchain_id;    // part of the verdict's key
};

// Whether builds for a platform run isolated: KILN_OPENCL_ISOLATE=1 for every platform, =0 for
// none, unset for PoCL's (ICD suffix "pocl") only.
bool isolate_builds(std::string_view platform_short_name);

// The helper: $KILN_OPENCL_PROBE, else kiln-opencl-probe beside the running program, in kiln's
// install libexec folder, or in its build tree. "" when none is found.
std::string probe_executable();

// Builds `source` with `options` in the helper and returns CL_PROGRAM_BINARIES (empty when the
// driver keeps none); nothing when no helper is found (the caller builds in-process). Throws
// kiln::Error when the build fails (with its log), crashes or hangs (with the signal and the
// compiler's last output), or crashed for the same source and device in an earlier process.
std::optional<std::vector<uint8_t>> build_isolated(const IsolatedTarget& target,
                                                   const std::string& source,
                                                   std::string_view options);

}  // namespace kiln::runtime::opencl
