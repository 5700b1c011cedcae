// stream_ms: the device time per launch in a steady stream of launches that each read cold
// inputs. The inputs are rotated among `sets` copies whose total is far beyond the cache, so a
// set is always evicted before its next turn; the launches are queued back to back behind a
// blocker (untimed device work long enough for the host to queue them all), so the gaps between
// them are the device's own, not the host's. This is the steady state of a model's forward
// pass (each layer's weights read once, cold) and the way a bandwidth ceiling is measured.
// time_dispatches (flush, then one timed launch) instead counts a lone launch's ramp and the
// flush's dirty lines. bench/peers_stream.py times the torch peers the same way.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"

namespace kiln::bench {

inline constexpr double kStreamBytes = 256.0 * (1 << 20);  // rotated bytes: several L2s
inline constexpr int kStreamMaxSets = 64;
inline constexpr int kStreamLaunches = 32;  // timed launches per repetition, at least
inline constexpr int kStreamReps = 9;

// How many input sets a launch touching `bytes` needs so the rotation exceeds the cache.
inline int stream_sets(double bytes) {
    const double sets = std::ceil(kStreamBytes / std::max(bytes, 1.0));
    return static_cast<int>(std::clamp(sets, 2.0, double{kStreamMaxSets}));
}

struct StreamTiming {
    double ms = 0;             // median device ms per launch
    bool host_kept_up = true;  // every repetition's launches were queued before the blocker ended
};

// `launch(i)` enqueues one launch over input set i (0 <= i < sets).
inline StreamTiming stream_ms(Device& d, int sets, const std::function<void(int)>& launch) {
    const uint64_t memory = d.info().memory_bytes;
    const size_t blocker_bytes =
        memory > 0 ? std::min<size_t>(size_t{1} << 30, memory / 16 & ~size_t{3}) : size_t{1} << 30;
    Buffer blocker(d, DType::u32, blocker_bytes / 4);
    const uint32_t pattern = 0x5bd1e995u;
    auto block = [&] { d.fill(blocker.memory(), &pattern, sizeof pattern); };
    const int launches = sets * ((kStreamLaunches + sets - 1) / sets);
    auto round = [&](int n) {
        for (int i = 0; i < n; ++i) launch(i % sets);
    };
    round(sets);  // warm-up: module loads, first touches
    d.synchronize();
    // Calibrate the blocker: enough fills to outlast queueing a round and the timed launches.
    const auto t0 = std::chrono::steady_clock::now();
    round(sets + launches);
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    d.synchronize();
    const double fill_ms = d.time_ms(block);
    const int fills = static_cast<int>(std::ceil(2.0 * host_ms / std::max(fill_ms, 1e-3))) + 1;
    StreamTiming out;
    std::vector<double> per_launch;
    for (int r = 0; r < kStreamReps; ++r) {
        for (int f = 0; f < fills; ++f) block();
        const auto queued0 = std::chrono::steady_clock::now();
        round(sets);  // untimed: writes back the blocker's dirty lines, leaves the steady state
        double queued_ms = 0;
        const double ms = d.time_ms([&] {
            round(launches);
            queued_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                                  queued0)
                            .count();
        });
        if (queued_ms > fills * fill_ms) out.host_kept_up = false;
        per_launch.push_back(ms / launches);
    }
    out.ms = median(per_launch);
    return out;
}

}  // namespace kiln::bench
