// CudaDevice: one NVIDIA GPU driven through the CUDA driver API. Kernels are compiled by NVRTC
// to cubins for the device's architecture and launched on the device's one stream.
#pragma once

#ifdef KILN_HAVE_CUDA_HEADERS

#include <memory>
#include <mutex>

#include <cuda.h>

#include "kiln/device.hpp"

namespace kiln::cuda {

struct Context;

class CudaDevice final : public Device {
  public:
    // Describes device `ordinal`; the primary context is retained on first use, not here.
    // Throws kiln::Error when the device cannot be queried.
    explicit CudaDevice(int ordinal);
    ~CudaDevice() override;

    const DeviceInfo& info() const override { return info_; }

    std::shared_ptr<DeviceMemory> allocate(size_t bytes) override;
    void write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) override;
    void read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) override;
    void fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) override;
    void copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) override;
    std::shared_ptr<DeviceMemory> wrap(uintptr_t address, size_t bytes,
                                       std::shared_ptr<void> owner) override;
    uintptr_t address(const DeviceMemory& memory) override;
    uintptr_t native_stream() override;

    std::string toolchain_id() const override;
    std::string_view source_suffix() const override { return ".cu"; }
    std::vector<uint8_t> compile(const std::string& source) override;
    std::unique_ptr<Module> load(std::span<const uint8_t> binary) override;

    void launch(Module& module, const std::string& entry, int64_t grid, int block,
                std::span<const KernelArg> args) override;
    void synchronize() override;
    void release_cached_memory() override;
    double time_ms(const std::function<void()>& work) override;
    // Captures the work into a CUDA graph (stream capture), instantiated once.
    std::unique_ptr<Recording> record(std::function<void()> work) override;
    bool recording() const override;
    bool records_graphs() const override { return true; }

  private:
    // The device's context and stream, retained on first call and made current on this thread.
    std::shared_ptr<Context> current();

    int ordinal_ = 0;
    CUdevice device_ = 0;
    DeviceInfo info_;
    mutable std::mutex mutex_;
    std::shared_ptr<Context> context_;
};

}  // namespace kiln::cuda

#endif  // KILN_HAVE_CUDA_HEADERS
