// stream_ms (and graph_ms, the same stream replayed from a recording): the device time per
// launch in a steady stream of launches that each read cold inputs. The inputs are rotated among
// `sets` copies whose total is far beyond the cache, so a set is always evicted before its next
// turn; the launches are queued back to back behind a blocker (untimed device work long enough for
// the host to queue them all), so the gaps between them are the device's own, not the host's. The
// blocker only computes, as torch.cuda._sleep does for bench/peers_stream.py: a fill would leave
// the L2 full of dirty lines that the timed launches then write back (about 0.1 us a launch at 32 x
// 4096 rms_norm, any kernel). This is the steady state of a model's forward pass (each layer's
// weights read once, cold) and the way a bandwidth ceiling is measured. time_dispatches (flush,
// then one timed launch) instead counts a lone launch's ramp and the flush's dirty lines.
// bench/peers_stream.py times the torch peers the same way.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"

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

// Untimed device work that touches no memory: one block stepping an integer recurrence (its
// result is stored only if it equals `never`, which it does not), calibrated to milliseconds.
class Blocker {
  public:
    explicit Blocker(Device& d) : kernel_(compile(d, build())), sink_(d, DType::u32, 1) {
        constexpr int64_t kProbe = int64_t{1} << 20;
        run(kProbe);  // warm-up
        const double ms = d.time_ms([&] { run(kProbe); });
        steps_per_ms_ = static_cast<double>(kProbe) / std::max(ms, 1e-4);
    }
    void block(double ms) {
        for (double steps = ms * steps_per_ms_; steps > 0; steps -= kMaxSteps)
            run(static_cast<int64_t>(std::min(steps, double{kMaxSteps})) + 1);
    }

  private:
    static constexpr int64_t kMaxSteps = int64_t{1} << 30;
    static ir::Kernel build() {
        KernelBuilder k("stream_blocker", 32);
        auto out = k.output("out", DType::u32);
        Expr steps = k.scalar("steps", DType::i32);
        Expr never = k.scalar("never", DType::u32);
        Var acc = k.let(DType::u32, 0x9e3779b9u, "acc");
        k.for_(
            Expr(0), steps, [&](Expr) { acc = acc * 1664525u + 1013904223u; }, Expr(1));
        k.if_(acc == never, [&] { out[0] = acc; });
        return k.finish();
    }
    void run(int64_t steps) {
        kernel_->launch(1, {sink_, static_cast<int32_t>(steps), uint32_t{0x5bd1e995u}});
    }
    std::shared_ptr<CompiledKernel> kernel_;
    Buffer sink_;
    double steps_per_ms_ = 1;
};

// `launch(i)` enqueues one launch over input set i (0 <= i < sets).
inline StreamTiming stream_ms(Device& d, int sets, const std::function<void(int)>& launch) {
    Blocker blocker(d);
    const int launches = sets * ((kStreamLaunches + sets - 1) / sets);
    auto round = [&](int n) {
        for (int i = 0; i < n; ++i) launch(i % sets);
    };
    round(sets);  // warm-up: module loads, first touches
    d.synchronize();
    // Block long enough to outlast queueing a round and the timed launches.
    const auto t0 = std::chrono::steady_clock::now();
    round(sets + launches);
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    d.synchronize();
    const double block_ms = std::max(2.0 * host_ms, 1.0);
    StreamTiming out;
    std::vector<double> per_launch;
    for (int r = 0; r < kStreamReps; ++r) {
        blocker.block(block_ms);
        const auto queued0 = std::chrono::steady_clock::now();
        round(sets);  // untimed: leaves the steady state
        double queued_ms = 0;
        const double ms = d.time_ms([&] {
            round(launches);
            queued_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                                  queued0)
                            .count();
        });
        if (queued_ms > block_ms) out.host_kept_up = false;
        per_launch.push_back(ms / launches);
    }
    out.ms = median(per_launch);
    return out;
}

// The device time per launch of the same steady stream replayed from one recording
// (Device::record): on CUDA a graph, whose launches run without the gaps that separately queued
// launches leave between them (METHOD.md: capture a graph and time its replays; a model's
// decode loop runs this way). The recording holds `launches` launches over the sets in turn;
// each timed replay follows an untimed one behind the blocker, as in stream_ms.
inline double graph_ms(Device& d, int sets, const std::function<void(int)>& launch) {
    Blocker blocker(d);
    const int launches = sets * ((kStreamLaunches + sets - 1) / sets);
    for (int i = 0; i < sets; ++i) launch(i);  // warm-up: module loads, first touches
    d.synchronize();
    const std::unique_ptr<Recording> recording = d.record([&] {
        for (int i = 0; i < launches; ++i) launch(i % sets);
    });
    recording->replay();  // warm-up: the graph's first upload
    d.synchronize();
    std::vector<double> per_launch;
    for (int r = 0; r < kStreamReps; ++r) {
        blocker.block(1.0);
        recording->replay();  // untimed: reaches the steady state
        per_launch.push_back(d.time_ms([&] { recording->replay(); }) / launches);
    }
    return median(per_launch);
}

}  // namespace kiln::bench
