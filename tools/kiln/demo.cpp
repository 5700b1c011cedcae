// `kiln demo`: compiles one DSL kernel (demo_kernel.hpp) for every device under two schedules,
// runs it, times it, and checks it bit for bit against the plain C++ oracle. Exit code 1 when
// any device is not bit-identical.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_common.hpp"
#include "cli_common.hpp"
#include "demo_kernel.hpp"
#include "kiln/compile.hpp"
#include "table.hpp"

namespace kiln::cli {
namespace {

struct DemoOptions {
    std::string device;  // empty: every device
    int64_t n = 1000;    // row length: the fold's extent
    int64_t rows = 4096;
    int repeats = 10;
};

// Deterministic inputs in [-4, 4), negatives included so |x| matters.
std::vector<float> demo_input(size_t count) {
    std::vector<float> x(count);
    uint32_t state = 12345u;
    for (float& v : x) {
        state = state * 1664525u + 1013904223u;
        v = static_cast<float>(state >> 8) * (8.0f / 16777216.0f) - 4.0f;
    }
    return x;
}

// The schedules the demo runs: one thread per row, and a row shared by a warp (32 threads,
// through shuffles) where the device has warps, else by 8 threads (through a shared tile).
std::vector<int> schedules(const Device& d) {
    return {1, d.info().warp_size >= 32 ? 32 : 8};
}

int run_demo(const DemoOptions& opt) {
    const int64_t n = opt.n, rows = opt.rows;  // each >= 1 (add_number_option)
    if (n > (int64_t{1} << 30) / rows)
        fail("demo: --n {} x --rows {} is out of range; expected a product <= 2^30", n, rows);
    std::vector<Device*> targets;
    if (opt.device.empty())
        targets.assign(devices().begin(), devices().end());
    else
        targets.push_back(&find_device(opt.device));
    if (targets.empty()) fail("demo: no devices are available (see `kiln info`)");

    const float a = 0.75f;
    const std::vector<float> x = demo_input(static_cast<size_t>(n * rows));
    const std::vector<float> expected = demo_oracle(x, n, a);
    fmt::print("kernel: out[r] = sum_i (a*x[r,i] + sqrt(|x[r,i]|))^2, {} rows of {} f32, a = {}\n",
               rows, n, a);
    fmt::print(
        "fold: canonical, {} lanes x chunks of {}; the schedule only maps it onto threads\n\n",
        demo_fold_lanes, demo_fold_chunk);

    Table table({"device", "threads/row", "compile ms", "disk hit", "run ms", "bit-identical"});
    std::vector<std::string> notes;
    bool all_identical = true;
    for (Device* d : targets) {
        Buffer bx(*d, DType::f32, x.size()), bout(*d, DType::f32, expected.size());
        bx.upload(x);
        for (int threads : schedules(*d)) {
            auto kernel = compile(*d, demo_kernel(n, threads));
            const CompileInfo& ci = kernel->info();
            const int64_t grid = demo_grid(rows, threads);
            bout.fill(-1.0);
            kernel->launch(grid, {bx, bout, a});
            const std::vector<float> got = bout.download<float>();
            size_t bad = got.size();
            for (size_t r = 0; r < got.size() && bad == got.size(); ++r)
                if (std::bit_cast<uint32_t>(got[r]) != std::bit_cast<uint32_t>(expected[r]))
                    bad = r;
            if (bad != got.size()) {
                all_identical = false;
                notes.push_back(fmt::format(
                    "{} threads/row={}: row {} is {:.9g} (0x{:08x}), the oracle says {:.9g} "
                    "(0x{:08x})",
                    d->info().id, threads, bad, got[bad], std::bit_cast<uint32_t>(got[bad]),
                    expected[bad], std::bit_cast<uint32_t>(expected[bad])));
            }
            std::vector<double> ms;
            for (int i = 0; i < opt.repeats; ++i)
                ms.push_back(d->time_ms([&] { kernel->launch(grid, {bx, bout, a}); }));
            table.add({d->info().id, std::to_string(threads),
                       fmt::format("{:.1f}", ci.codegen_ms + ci.compile_ms + ci.load_ms),
                       ci.disk_hit ? "yes" : "no", fmt::format("{:.3f}", bench::median(ms)),
                       bad == got.size() ? "yes" : "no"});
        }
    }
    table.print();
    for (const auto& note : notes) fmt::print("mismatch: {}\n", note);
    return all_identical ? 0 : 1;
}

}  // namespace

Command add_demo_command(CLI::App& parent) {
    auto opt = std::make_shared<DemoOptions>();
    CLI::App* app = parent.add_subcommand(
        "demo", "Compile one kernel for every device, time it, check it against the oracle");
    app->add_option("--device,-d", opt->device,
                    "Only this device: an id, an index or a backend name (cpu, cuda, opencl)");
    add_number_option(app, "--n", opt->n, "Row length (the fold's extent)")->capture_default_str();
    add_number_option(app, "--rows", opt->rows, "Number of rows")->capture_default_str();
    add_number_option(app, "--repeats", opt->repeats, "Timed launches per device (median reported)",
                      1, 1000)
        ->capture_default_str();
    return {app, [opt] { return run_demo(*opt); }};
}

}  // namespace kiln::cli
