// time_dispatches: the timing protocol variants share (warm-up, L2 flush on GPUs, median).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/tune.hpp"

namespace kiln {
namespace {

constexpr int kWarmups = 3;
constexpr size_t kFlushBytes = size_t{256} << 20;

bool is_gpu(const DeviceInfo& info) {
    if (info.backend == Backend::cuda) return true;
    return info.backend != Backend::cpu && info.arch.find("GPU") != std::string::npos;
}

// The scratch memory written to evict the L2 before each timed dispatch: one per device, kept.
DeviceMemory& flush_memory(Device& device) {
    static std::mutex mutex;
    static std::map<Device*, std::shared_ptr<DeviceMemory>> scratch;
    std::lock_guard lock(mutex);
    auto& memory = scratch[&device];
    if (!memory) {
        size_t bytes = kFlushBytes;
        // A device with little memory gets a quarter of it (still far beyond any L2).
        if (const uint64_t total = device.info().memory_bytes; total > 0)
            bytes = std::min<size_t>(bytes, std::max<uint64_t>(total / 4, 4) & ~uint64_t{3});
        memory = device.allocate(bytes);
    }
    return *memory;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

double time_dispatches(Device& device, int iters, const std::function<void()>& launch,
                       const std::function<void()>& before_each) {
    if (iters < 1) fail("time_dispatches: iters is {}; expected at least 1", iters);
    if (!launch) fail("time_dispatches: no launch function given");
    auto prepare = [&] {
        if (before_each) before_each();
    };
    if (iters == 1) {
        prepare();
        return device.time_ms(launch);
    }
    for (int i = 0; i < kWarmups; ++i) {
        prepare();
        launch();
    }
    const bool flush = is_gpu(device.info());
    DeviceMemory* scratch = flush ? &flush_memory(device) : nullptr;
    std::vector<double> times;
    times.reserve(static_cast<size_t>(iters));
    for (int i = 0; i < iters; ++i) {
        prepare();
        if (scratch) {
            const uint32_t pattern = 0x9e3779b9u + static_cast<uint32_t>(i);
            device.fill(*scratch, &pattern, sizeof pattern);
        }
        // No synchronize here: the untimed work is queued on the same in-order stream ahead of
        // the timed launch, so the clock starts when it ends, by which time the launch is
        // already queued. What is timed is the device's time for the launch, not the host's
        // time to submit it (the host cost is a separate figure). triton's do_bench times the
        // same way.
        times.push_back(device.time_ms(launch));
    }
    return median(std::move(times));
}

}  // namespace kiln
