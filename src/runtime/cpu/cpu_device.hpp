// The CPU device: host memory, kernels compiled by the system C++ compiler into shared objects,
// and launches that split the grid into block ranges run on a thread pool.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "kiln/device.hpp"
#include "runtime/cpu/thread_pool.hpp"
#include "runtime/cpu/toolchain.hpp"

namespace kiln::runtime::cpu {

// 64-byte aligned host memory kiln allocates, or host memory another library owns (held
// through `owner`, never freed here).
class CpuMemory final : public DeviceMemory {
  public:
    explicit CpuMemory(size_t bytes);
    CpuMemory(void* data, size_t bytes, std::shared_ptr<void> owner);
    ~CpuMemory() override;
    CpuMemory(const CpuMemory&) = delete;
    CpuMemory& operator=(const CpuMemory&) = delete;
    size_t bytes() const override { return bytes_; }
    uintptr_t handle() const override { return reinterpret_cast<uintptr_t>(data_); }
    void* data() const { return data_; }

  private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
    std::shared_ptr<void> owner_;  // set for memory another library owns
};

struct CpuDeviceOptions {
    std::string compiler = "c++";  // a path, or a name looked up on $PATH
    int threads = 0;               // pool size; 0 = the CPUs of the affinity mask
    std::chrono::milliseconds compile_timeout = std::chrono::seconds(120);
};

// The options from the environment: $KILN_CXX, $KILN_NUM_THREADS (or $KILN_CPU_THREADS);
// kiln::Error when malformed.
CpuDeviceOptions options_from_environment();

class CpuDevice final : public Device {
  public:
    // Probes the compiler; a missing or broken compiler leaves the device usable for memory, and
    // makes toolchain_id() and compile() throw a kiln::Error that says so.
    explicit CpuDevice(const CpuDeviceOptions& options);

    const DeviceInfo& info() const override { return info_; }
    const Toolchain& toolchain() const { return toolchain_; }

    std::shared_ptr<DeviceMemory> allocate(size_t bytes) override;
    void write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) override;
    void read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) override;
    void fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) override;
    void copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) override;
    std::shared_ptr<DeviceMemory> wrap(uintptr_t address, size_t bytes,
                                       std::shared_ptr<void> owner) override;
    uintptr_t address(const DeviceMemory& memory) override;

    std::string toolchain_id() const override;
    std::string_view source_suffix() const override { return ".cpp"; }
    std::vector<uint8_t> compile(const std::string& source) override;
    bool has_unoptimized_build() const override { return true; }
    std::vector<uint8_t> compile_unoptimized(const std::string& source) override;
    std::unique_ptr<Module> load(std::span<const uint8_t> binary) override;

    void launch(Module& module, const std::string& entry, int64_t grid, int block,
                std::span<const KernelArg> args) override;
    void synchronize() override {}
    double time_ms(const std::function<void()>& work) override;

  private:
    Toolchain toolchain_;
    std::chrono::milliseconds compile_timeout_;
    std::unique_ptr<ThreadPool> pool_;
    DeviceInfo info_;
};

}  // namespace kiln::runtime::cpu
