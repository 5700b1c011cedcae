// minilm_plan: the planner's host time on all-MiniLM-L6-v2's whole forward (the compiled
// program's trace: one graph, sequence 128) with warm caches. Each rep builds a fresh model
// (a fresh program) and forgets the cached plans and the in-memory kernels, so it traces,
// plans, compiles (from the disk cache once it is warm) and races (from the tuner's decisions
// once they are kept) again, as a new process would. Prints the first rep and the medians of
// the others: the trace's call in all, the resolve's passes (KILN_RESOLVE_PROFILE's parts) and
// a replay's call (the kernels' run, which the race's figure includes once).
//   bench_minilm_plan [--device D] [--batch N] [--reps N] [--model DIR]
// Run it once first to fill the caches; the figures of a cold run include compiling and racing.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "kiln/compile.hpp"
#include "kiln/error.hpp"
#include "minilm/model.hpp"
#include "minilm/model_dir.hpp"
#include "plan/profile.hpp"
#include "plan/resolve.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct Rep {
    double call_ms, plan_ms, choose_ms, rank_ms, lower_ms, compile_ms, race_ms, replay_ms;
};

Rep one_rep(const std::filesystem::path& dir, kiln::Device& device, int batch) {
    const minilm::Model model(dir, device);
    kiln::plan::clear_plan_cache();
    kiln::clear_memory_cache();
    std::vector<std::vector<int32_t>> ids(static_cast<size_t>(batch));
    for (auto& seq : ids) {
        seq.push_back(101);
        for (int j = 1; j < 127; ++j) seq.push_back(1996 + (j * 7919) % 20000);
        seq.push_back(102);
    }
    device.synchronize();
    const auto t0 = Clock::now();
    const kiln::Tensor e = model.embed(ids);
    device.synchronize();
    const double call_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const kiln::plan::ResolveReport r = kiln::plan::last_report();
    if (r.hit) kiln::fail("minilm_plan: the forward hit the plan cache; expected it to plan");
    // A replay: the kernels' run, which the race's figure includes (each launch's winner runs).
    const auto t1 = Clock::now();
    model.embed(ids);
    device.synchronize();
    const double replay_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    return {call_ms,          r.plan_us / 1e3,    r.choose_us / 1e3, r.rank_us / 1e3,
            r.lower_us / 1e3, r.compile_us / 1e3, r.race_us / 1e3,   replay_ms};
}

}  // namespace

int main(int argc, char** argv) {
    std::string device_name, model;
    int batch = 1, reps = 5;
    CLI::App app{"The planner's time on MiniLM's whole forward with warm caches", "minilm_plan"};
    app.add_option("--device", device_name, "device id, index or backend (default: cpu)");
    app.add_option("--batch", batch, "sentences a forward")->check(CLI::Range(1, 4096));
    app.add_option("--reps", reps, "forwards planned after the first (median)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--model", model, "all-MiniLM-L6-v2's directory");
    CLI11_PARSE(app, argc, argv);
    try {
        kiln::Device& device =
            device_name.empty() ? kiln::cpu_device() : kiln::find_device(device_name);
        const auto dir = minilm::model_dir(model);
        std::vector<Rep> all;
        for (int i = 0; i <= reps; ++i) all.push_back(one_rep(dir, device, batch));
        auto row = [](const char* what, auto field, const std::vector<Rep>& v) {
            std::vector<double> x;
            for (const Rep& r : v) x.push_back(r.*field);
            fmt::print("{:<10} {:>10.1f} {:>10.1f}\n", what, v.front().*field,
                       median(std::vector<double>(x.begin() + 1, x.end())));
        };
        fmt::print("MiniLM batch {} seq 128 on {}: ms, first rep and median of {}\n", batch,
                   device.info().id, reps);
        fmt::print("{:<10} {:>10} {:>10}\n", "pass", "first", "median");
        row("call", &Rep::call_ms, all);
        row("lookup", &Rep::plan_ms, all);
        row("choose", &Rep::choose_ms, all);
        row("rank", &Rep::rank_ms, all);
        row("lower", &Rep::lower_ms, all);
        row("compile", &Rep::compile_ms, all);
        row("race", &Rep::race_ms, all);
        row("replay", &Rep::replay_ms, all);
    } catch (const kiln::Error& e) {
        fmt::print(stderr, "minilm_plan: error: {}\n", e.what());
        return 2;
    }
    return 0;
}
