// OpenClDevice: one OpenCL device behind the ICD loader, with its own context and in-order,
// profiling-enabled command queue. Built by discover_opencl(); see discover.cpp.
#pragma once

#include <CL/cl.h>

#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kiln/device.hpp"
#include "runtime/opencl/isolated_build.hpp"

namespace kiln::runtime::opencl {

// Every program is built with exactly these options: OpenCL C 1.2 and correctly rounded / and
// sqrt. Nothing that relaxes math (-cl-mad-enable, -cl-fast-relaxed-math, ...) ever appears.
inline constexpr std::string_view build_options =
    "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";

class OpenClDevice final : public Device {
  public:
    // Creates the context and queue for `device` of `platform` and reads its info; throws
    // kiln::Error when the driver refuses.
    OpenClDevice(cl_platform_id platform, cl_device_id device);
    ~OpenClDevice() override;
    OpenClDevice(const OpenClDevice&) = delete;
    OpenClDevice& operator=(const OpenClDevice&) = delete;

    const DeviceInfo& info() const override { return info_; }

    std::shared_ptr<DeviceMemory> allocate(size_t bytes) override;
    void write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) override;
    void read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) override;
    void fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) override;
    void copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) override;

    std::string toolchain_id() const override { return toolchain_id_; }
    std::string_view source_suffix() const override { return ".cl"; }
    // compile() returns the driver's program binary (or, when the driver keeps none, the source)
    // inside binary_format.hpp's checked envelope; load() accepts only such envelopes.
    std::vector<uint8_t> compile(const std::string& source) override;
    // Builds without the driver's optimizer (-cl-opt-disable) only where the test suite passes
    // with them: PoCL 3. PoCL 5's work-group compiler aborts on some unoptimized kernels and
    // miscompiles others (notes/h200-2026-12-04.md); there KILN_OPTIMIZE=0 builds as usual.
    bool has_unoptimized_build() const override { return unoptimized_build_; }
    std::vector<uint8_t> compile_unoptimized(const std::string& source) override;
    std::unique_ptr<Module> load(std::span<const uint8_t> binary) override;

    void launch(Module& module, const std::string& entry, int64_t grid, int block,
                std::span<const KernelArg> args) override;
    void synchronize() override;
    double time_ms(const std::function<void()>& work) override;

    // CL_DEVICE_MAX_WORK_GROUP_SIZE, capped by CL_DEVICE_MAX_WORK_ITEM_SIZES[0].
    size_t max_work_group_size() const { return max_work_group_size_; }

  private:
    // The events of the commands one thread enqueued inside one time_ms() call.
    struct TimingRegion {
        std::thread::id thread;
        std::vector<cl_event> events;
    };
    friend class TimingScope;

    // Where an enqueue should write its event: `slot` while the calling thread is timing, else
    // null. record() hands the event to every open region of the calling thread.
    cl_event* event_slot(cl_event& slot);
    void record(cl_event event);

    // clBuildProgram with `options`; on failure throws with the build log.
    void build(cl_program program, std::string_view what, const std::string& options);
    // compile() with `options` (build_options, and more).
    std::vector<uint8_t> compile_with(const std::string& source, const std::string& options);

    // Wraps a driver binary (empty: the driver keeps none, so the source) in the envelope.
    static std::vector<uint8_t> payload(const std::string& source, std::span<const uint8_t> binary);

    cl_device_id device_ = nullptr;
    cl_context context_ = nullptr;
    cl_command_queue queue_ = nullptr;
    DeviceInfo info_;
    std::string toolchain_id_;
    std::string platform_short_name_;  // "pocl", "nv", ...: isolate_builds() decides by it
    bool unoptimized_build_ = false;   // see has_unoptimized_build()
    IsolatedTarget isolated_target_;
    size_t max_work_group_size_ = 0;
    uint64_t max_alloc_bytes_ = 0;

    std::mutex regions_mutex_;
    std::vector<TimingRegion*> regions_;
};

}  // namespace kiln::runtime::opencl
