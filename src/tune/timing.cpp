// time_dispatches: the timing protocol variants share (warm-up, L2 flush on GPUs, median).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/ceil_div.hpp"
#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/tune.hpp"

namespace kiln {
namespace {

constexpr int kWarmups = 3;
constexpr int kMinTimed = 3;  // timed launches, whatever the budget
constexpr size_t kFlushBytes = size_t{256} << 20;

// How the L2 is emptied before each timed GPU dispatch. `write` (the default) fills a scratch
// buffer, as triton's do_bench does: the L2 is left full of dirty lines, so a kernel that only
// reads also pays for writing those back. `read` (KILN_L2_FLUSH=read) reads the scratch
// buffer instead, leaving the L2 cold and clean: the dispatch pays only for its own traffic.
enum class Flush { write, read };

Flush flush_mode() {
    const char* env = std::getenv("KILN_L2_FLUSH");
    const std::string mode = env ? env : "";
    if (mode.empty() || mode == "write") return Flush::write;
    if (mode == "read") return Flush::read;
    fail("KILN_L2_FLUSH='{}'; expected write or read", mode);
}

// Reads every word of the scratch buffer (16 a thread, coalesced) and keeps an XOR of them so
// the loads are not dropped.
constexpr int kBlock = 256, kPerThread = 16;  // the read flush's block and words per thread

ir::Kernel read_flush_kernel() {
    KernelBuilder k("l2_flush_read", kBlock);
    auto scratch = k.input("scratch", DType::u32);
    auto sink = k.output("sink", DType::u32);
    Var acc = k.let(DType::u32, 0u, "acc");
    Var first = k.let(k.block_index() * (kBlock * kPerThread) + k.thread_index(), "first");
    for (int j = 0; j < kPerThread; ++j) {
        Expr i = first + j * kBlock;
        k.if_(i < scratch.len(), [&] { acc = acc ^ scratch[i]; });
    }
    k.if_(acc == 0x9e3779b9u, [&] { sink[k.thread_index()] = acc; });  // almost never taken
    return k.finish();
}

// The scratch state of one device, kept for the process.
struct FlushScratch {
    std::unique_ptr<Buffer> scratch, sink;
    std::shared_ptr<const CompiledKernel> reader;
};

FlushScratch& flush_scratch(Device& device) {
    static std::mutex mutex;
    static std::map<Device*, FlushScratch> states;
    std::lock_guard lock(mutex);
    FlushScratch& state = states[&device];
    if (!state.scratch) {
        size_t bytes = kFlushBytes;
        // A device with little memory gets a quarter of it (still far beyond any L2).
        if (const uint64_t total = device.info().memory_bytes; total > 0)
            bytes = std::min<size_t>(bytes, std::max<uint64_t>(total / 4, 4) & ~uint64_t{3});
        state.scratch = std::make_unique<Buffer>(device, DType::u32, bytes / 4);
    }
    return state;
}

void flush_l2(Device& device, Flush mode, int iteration) {
    FlushScratch& state = flush_scratch(device);
    if (mode == Flush::write) {
        const uint32_t pattern = 0x9e3779b9u + static_cast<uint32_t>(iteration);
        device.fill(state.scratch->memory(), &pattern, sizeof pattern);
        return;
    }
    if (!state.reader) {
        state.reader = compile(device, read_flush_kernel());
        state.sink = std::make_unique<Buffer>(device, DType::u32, kBlock);
    }
    const int64_t words = static_cast<int64_t>(state.scratch->count());
    state.reader->launch(ceil_div(words, int64_t{kBlock} * kPerThread),
                         {*state.scratch, *state.sink});
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

double time_dispatches(Device& device, int iters, const std::function<void()>& launch,
                       const std::function<void()>& before_each) {
    return time_dispatches_within(device, iters, std::numeric_limits<double>::infinity(), launch,
                                  before_each);
}

double time_dispatches_within(Device& device, int iters, double budget_ms,
                              const std::function<void()>& launch,
                              const std::function<void()>& before_each) {
    if (iters < 1) fail("time_dispatches: iters is {}; expected at least 1", iters);
    if (!(budget_ms > 0)) fail("time_dispatches: budget {} ms; expected more than 0", budget_ms);
    if (!launch) fail("time_dispatches: no launch function given");
    if (iters == 1) {  // a tuner hit: one launch, queued like any other, nothing waited for
        if (before_each) before_each();
        launch();
        return 0;
    }
    return time_dispatches_in_turns(device, iters, budget_ms, {launch}, before_each).at(0);
}

std::vector<double> time_dispatches_in_turns(Device& device, int iters, double budget_ms,
                                             const std::vector<std::function<void()>>& launches,
                                             const std::function<void()>& before_each) {
    if (iters < 2) fail("time_dispatches: iters is {}; expected at least 2 to time", iters);
    if (!(budget_ms > 0)) fail("time_dispatches: budget {} ms; expected more than 0", budget_ms);
    if (launches.empty()) fail("time_dispatches: no launches to time");
    for (const auto& launch : launches)
        if (!launch) fail("time_dispatches: no launch function given");
    auto prepare = [&] {
        if (before_each) before_each();
    };
    const bool flush = device.info().simt;
    const Flush mode = flush ? flush_mode() : Flush::write;  // read once, before any launch
    const bool bounded = std::isfinite(budget_ms);
    const size_t n = launches.size();
    // Each launch's warm-up and timed runs within its own budget, as if timed alone; but in
    // rounds of one run each, so that a slow stretch of a shared machine (another tenant, a
    // clock change) falls on every launch alike rather than on whichever was being timed.
    std::vector<double> warm_ms(n, 0), spent_ms(n, 0);
    for (int i = 0; i < kWarmups; ++i)
        for (size_t j = 0; j < n; ++j) {
            if (warm_ms[j] >= budget_ms / 4) continue;
            prepare();
            if (bounded)
                warm_ms[j] += device.time_ms(launches[j]);
            else
                launches[j]();
        }
    std::vector<std::vector<double>> times(n);
    auto wants_more = [&](size_t j) {
        const int timed = static_cast<int>(times[j].size());
        return timed < iters && (timed < kMinTimed || spent_ms[j] < budget_ms);
    };
    for (int i = 0;; ++i) {
        bool any = false;
        for (size_t j = 0; j < n; ++j) {
            if (!wants_more(j)) continue;
            any = true;
            prepare();
            if (flush) flush_l2(device, mode, i);
            // No synchronize here: the untimed work is queued on the same in-order stream ahead
            // of the timed launch, so the clock starts when it ends, by which time the launch
            // is already queued. What is timed is the device's time for the launch, not the
            // host's time to submit it (the host cost is a separate figure). triton's do_bench
            // times the same way.
            times[j].push_back(device.time_ms(launches[j]));
            spent_ms[j] += times[j].back();
        }
        if (!any) break;
    }
    std::vector<double> medians;
    for (auto& t : times) medians.push_back(median(std::move(t)));
    return medians;
}

}  // namespace kiln
