// `kiln bench`: every headline workload (bench_workloads.hpp) on one or more devices, beside the
// peers a user would run instead, in one run: progress on stderr, a table per device on stdout,
// and optionally the JSON (--json) and a self-contained HTML report (--report). --peers runs
// bench/peers_torch.py (on a GPU torch eager, torch.compile, cuBLAS, cuDNN, SDPA, a device copy;
// on the host torch eager on its CPU) at the same shapes when python3 can import torch, and
// merges its times into the same rows.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench_common.hpp"
#include "bench_results.hpp"
#include "bench_workloads.hpp"
#include "cli_common.hpp"
#include "kiln/error.hpp"
#include "output.hpp"
#include "plan/device_facts.hpp"
#include "runtime/cpu/process.hpp"

#ifndef KILN_COMMIT
#define KILN_COMMIT "unknown"
#endif
#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR ""
#endif

namespace kiln::cli {
namespace {

struct BenchOptions {
    std::string devices, cases, json, report, peers_script, halide;
    bool quick = false, peers = false;
    int iters = 25;
};

std::vector<Device*> chosen_devices(const std::string& text) {
    if (text.empty()) return {&best_device()};
    if (text == "all") return {devices().begin(), devices().end()};
    std::vector<Device*> out;
    for (const auto& name : bench::split_list(text)) out.push_back(&find_device(name));
    return out;
}

std::vector<const Workload*> chosen_workloads(const std::string& text) {
    std::vector<const Workload*> out;
    if (text.empty()) {
        for (const auto& w : bench_workloads()) out.push_back(&w);
        return out;
    }
    for (const auto& name : bench::split_list(text)) {
        const Workload* found = nullptr;
        for (const auto& w : bench_workloads())
            if (w.name == name) found = &w;
        if (!found) {
            std::vector<std::string> names;
            for (const auto& w : bench_workloads()) names.push_back(w.name);
            fail("bench --cases: no case '{}'; the cases are {}", name, fmt::join(names, ", "));
        }
        out.push_back(found);
    }
    return out;
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

// The torch peers: bench/peers_torch.py times each workload at kiln's shape, on the GPU or on
// torch's CPU where `d` runs on the host, and writes lines "case<TAB>peer<TAB>us"; they join the
// rows of the same case. Skipped, with a line on stderr, where python3 or torch is missing.
void add_torch_peers(const BenchOptions& opt, const Device& d,
                     const std::vector<const Workload*>& workloads, BenchSettings& settings,
                     std::vector<BenchResult>& results) {
    const auto python = runtime::cpu::find_executable("python3");
    if (!python) {
        std::fprintf(stderr, "bench --peers: no python3 on PATH; torch peers skipped\n");
        return;
    }
    if (!runtime::cpu::run_process({*python, "-c", "import torch"}, std::chrono::minutes(2)).ok()) {
        std::fprintf(stderr, "bench --peers: python3 cannot import torch; torch peers skipped\n");
        return;
    }
    const std::string script = opt.peers_script.empty()
                                   ? std::string(KILN_SOURCE_DIR) + "/bench/peers_torch.py"
                                   : opt.peers_script;
    if (!std::filesystem::exists(script))
        fail("bench --peers: no peers script at '{}' (--peers-script names it)", script);
    const auto dir = std::filesystem::temp_directory_path() /
                     fmt::format("kiln-bench-peers-{}", static_cast<long>(getpid()));
    std::filesystem::create_directories(dir);
    std::string spec;
    for (const Workload* w : workloads) {
        const PeerSpec s = w->spec(d, settings);
        spec += fmt::format("{}\t{}\t{}\n", w->name, s.kind, fmt::join(s.dims, ","));
    }
    write_output((dir / "spec.tsv").string(), spec);
    const char* where = runs_on_host_cpu(d) ? "cpu" : "cuda";
    std::fprintf(stderr, "running the torch peers on %s (%s) ...\n", where, script.c_str());
    const auto r = runtime::cpu::run_process(
        {*python, script, "--device", where, "--spec", (dir / "spec.tsv").string(), "--out",
         (dir / "peers.tsv").string()},
        std::chrono::minutes(60));
    if (!r.ok()) {
        std::filesystem::remove_all(dir);
        fail("bench --peers: {} failed:\n{}", script, r.output);
    }
    std::ifstream in(dir / "peers.tsv");
    for (std::string line; std::getline(in, line);) {
        const auto fields = [&] {
            std::vector<std::string> f;
            std::stringstream ss(line);
            for (std::string item; std::getline(ss, item, '\t');) f.push_back(item);
            return f;
        }();
        if (fields.size() != 3) continue;
        for (auto& res : results)
            if (res.name == fields[0]) res.peers.push_back({fields[1], std::stod(fields[2])});
    }
    std::filesystem::remove_all(dir);
}

int run_bench(const BenchOptions& opt) {
    BenchSettings settings;
    settings.quick = opt.quick;
    settings.iters = opt.quick ? 3 : opt.iters;
    settings.hits = opt.quick ? 3 : 20;
    settings.halide = opt.halide;
    const auto workloads = chosen_workloads(opt.cases);
    BenchRun run{KILN_COMMIT, utc_now(), {}};
    for (Device* d : chosen_devices(opt.devices)) {
        std::fprintf(stderr, "measuring %s's copy bandwidth and f32 rate ...\n",
                     d->info().id.c_str());
        const plan::DeviceFacts& facts = plan::device_facts(*d);
        DeviceRun dr{d->info().id, facts.bandwidth / 1e3, facts.flops / 1e3, {}};
        for (size_t i = 0; i < workloads.size(); ++i) {
            const Workload& w = *workloads[i];
            std::fprintf(stderr, "[%zu/%zu] %s on %s ...\n", i + 1, workloads.size(),
                         w.name.c_str(), d->info().id.c_str());
            BenchResult r = w.run(*d, settings);
            const PeerTime* best = best_peer(r);
            std::fprintf(stderr, "        %s: kiln %.2f us (setup %.0f ms)%s\n", r.shape.c_str(),
                         r.kiln_us, r.setup_ms,
                         best ? fmt::format(", {} {:.2f} us", best->name, best->us).c_str() : "");
            dr.results.push_back(std::move(r));
        }
        if (opt.peers) add_torch_peers(opt, *d, workloads, settings, dr.results);
        run.devices.push_back(std::move(dr));
    }
    bool identical = true;
    for (const auto& d : run.devices) {
        print_bench_table(d);
        for (const auto& r : d.results) identical = identical && r.bit_identical.value_or(true);
    }
    if (!opt.json.empty()) write_output(opt.json, bench_json(run));
    if (!opt.report.empty()) write_output(opt.report, bench_html(run));
    if (!identical) std::fprintf(stderr, "bench: a result is NOT bit-identical to its oracle\n");
    return identical ? 0 : 1;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
    auto opt = std::make_shared<BenchOptions>();
    auto* b = parent.add_subcommand(
        "bench", "Time every headline workload beside its peers (table, --json, --report)");
    b->add_option("--device", opt->devices,
                  "device ids, indices or backends, comma-separated, or 'all' (default: the best)");
    b->add_option("--cases", opt->cases, "comma-separated case names (default: every case)");
    b->add_option("--json", opt->json, "write the results as JSON to this file");
    b->add_option("--report", opt->report, "write a self-contained HTML report to this file");
    b->add_flag("--quick", opt->quick, "tiny shapes and few repeats (a smoke test, not figures)");
    add_number_option(b, "--iters", opt->iters, "timed dispatches per figure (median; default 25)",
                      3, 10000);
    b->add_flag("--peers", opt->peers,
                "also run bench/peers_torch.py: torch on the GPU, or on the CPU for a host device "
                "(needs python3 with torch)");
    b->add_option("--peers-script", opt->peers_script,
                  "the torch peers script (bench/peers_torch.py)");
    b->add_option("--halide", opt->halide,
                  "the Halide peers' library (bench/peers_halide.py builds it)");
    return {b, [opt] { return run_bench(*opt); }};
}

}  // namespace kiln::cli
