// discover_cpu: the one CPU device, configured from $KILN_CXX and $KILN_NUM_THREADS (or its
// older name $KILN_CPU_THREADS).
#include <cerrno>
#include <cstdlib>
#include <string>

#include "kiln/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/discover.hpp"

namespace kiln::runtime {

namespace {

// A thread count from the variable `name`, or 0 where it is unset or empty.
int threads_from(const char* name) {
    const char* text = std::getenv(name);
    if (!text || !*text) return 0;
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || n < 1 || n > 4096)
        fail("{}='{}' is not a thread count; expected an integer from 1 to 4096", name, text);
    return static_cast<int>(n);
}

}  // namespace

cpu::CpuDeviceOptions cpu::options_from_environment() {
    CpuDeviceOptions options;
    if (const char* cxx = std::getenv("KILN_CXX"); cxx && *cxx) options.compiler = cxx;
    const int threads = threads_from("KILN_NUM_THREADS");
    const int older = threads_from("KILN_CPU_THREADS");  // the name before KILN_NUM_THREADS
    if (threads && older && threads != older)
        fail("KILN_NUM_THREADS={} and KILN_CPU_THREADS={} disagree; expected one of them set",
             threads, older);
    options.threads = threads ? threads : older;
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
