// discover_cpu: the one CPU device, configured from $KILN_CXX and $KILN_CPU_THREADS.
#include <cstdlib>
#include <string>

#include "kiln/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/discover.hpp"

namespace kiln::runtime {

cpu::CpuDeviceOptions cpu::options_from_environment() {
    CpuDeviceOptions options;
    if (const char* cxx = std::getenv("KILN_CXX"); cxx && *cxx) options.compiler = cxx;
    if (const char* threads = std::getenv("KILN_CPU_THREADS"); threads && *threads) {
        char* end = nullptr;
        long n = std::strtol(threads, &end, 10);
        if (*end != '\0' || n < 1 || n > 4096)
            fail("KILN_CPU_THREADS='{}' is not a thread count; expected an integer from 1 to 4096",
                 threads);
        options.threads = static_cast<int>(n);
    }
    return options;
}

std::vector<std::unique_ptr<Device>> discover_cpu(std::string* reason) {
    std::vector<std::unique_ptr<Device>> found;
    try {
        found.push_back(std::make_unique<cpu::CpuDevice>(cpu::options_from_environment()));
    } catch (const std::exception& e) {
        if (reason) *reason = e.what();
    }
    return found;
}

}  // namespace kiln::runtime
