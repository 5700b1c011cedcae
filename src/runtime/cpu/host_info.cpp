// Host facts for the CPU device's DeviceInfo, read from /proc/cpuinfo, uname, sysconf and the
// affinity mask.
#include "runtime/cpu/host_info.hpp"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace kiln::runtime::cpu {

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        size_t begin = line.find_first_not_of(" \t", colon + 1);
        if (begin == std::string::npos) continue;
        size_t end = line.find_last_not_of(" \t\r");
        return line.substr(begin, end - begin + 1);
    }
    return "host CPU";
}

std::string machine_name() {
    utsname u{};
    if (::uname(&u) != 0) return "unknown";
    return u.machine;
}

std::string kernel_release() {
    utsname u{};
    if (::uname(&u) != 0) return "unknown kernel";
    return std::string(u.sysname) + " " + u.release;
}

uint64_t physical_memory_bytes() {
    long pages = ::sysconf(_SC_PHYS_PAGES);
    long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

int usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? static_cast<int>(hw) : 1;
}

std::string sanitize_id(const std::string& text) {
    std::string out;
    for (char c : text) {
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
        char next = keep ? c : '_';
        if (next == '_' && !out.empty() && out.back() == '_') continue;
        out += next;
    }
    return out;
}

}  // namespace kiln::runtime::cpu
