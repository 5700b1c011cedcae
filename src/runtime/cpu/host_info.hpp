// Facts about the host the CPU device reports: CPU model, machine, kernel release, memory, the
// CPUs the process may use.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::runtime::cpu {

std::string cpu_model_name();  // "model name" from /proc/cpuinfo, else "host CPU"
std::string machine_name();    // uname machine ("x86_64")
std::string kernel_release();  // "Linux 6.1.0-18-amd64"
uint64_t physical_memory_bytes();
// The CPUs this process may run on (its affinity mask: containers and CI runners limit it), else
// std::thread::hardware_concurrency(), else 1.
int usable_cpus();
// Replaces every character outside [A-Za-z0-9._-] by '_' and collapses runs of '_'.
std::string sanitize_id(const std::string& text);

}  // namespace kiln::runtime::cpu
