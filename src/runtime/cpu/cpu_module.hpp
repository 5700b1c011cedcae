// A CPU kernel binary loaded into the process: a dlopen'ed shared object whose entry points are
// looked up once and cached.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "kiln/device.hpp"

namespace kiln::runtime::cpu {

// The CPU kernel entry of src/runtime/ABI.md.
using KernelEntry = void (*)(void* const* args, int64_t block_begin, int64_t block_end,
                             int64_t grid_size);

class CpuModule final : public Module {
  public:
    // Loads a shared object from its bytes (memfd, or a temporary file where memfd is missing).
    // Throws kiln::Error with dlerror()'s text when it does not load.
    explicit CpuModule(std::span<const uint8_t> binary);
    ~CpuModule() override;
    CpuModule(const CpuModule&) = delete;
    CpuModule& operator=(const CpuModule&) = delete;

    // The entry point named `entry`; throws kiln::Error naming it when the module lacks it.
    KernelEntry entry(const std::string& name);
    void require_entry(const std::string& name) override { entry(name); }

  private:
    void* handle_ = nullptr;
    std::mutex mutex_;
    std::unordered_map<std::string, KernelEntry> entries_;
};

}  // namespace kiln::runtime::cpu
