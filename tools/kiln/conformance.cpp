// `kiln conformance [--device D] [--area A,...] [--filter SUBSTR] [--runs N] [--seed S] [--sweep]
// [--json FILE]`: runs the conformance suite (src/conformance/) on the chosen devices (default:
// every device), prints each failure with what reproduces it, then the summary line
// `N results: P passed, S skipped, F failed; M miscompiles`. --json writes every result. Exit
// status 1 when anything failed.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "cli_common.hpp"
#include "conformance/suite.hpp"
#include "json.hpp"
#include "kiln/error.hpp"
#include "output.hpp"

namespace kiln::cli {
namespace {

struct ConformanceOptions {
    std::vector<std::string> devices, areas;
    std::string filter, json;
    int runs = 3;
    uint64_t seed = 0;
    bool sweep = false, verbose = false;
};

std::string result_json(const conformance::Result& r) {
    std::string text = fmt::format(
        "{{\"area\": {}, \"name\": {}, \"run\": {}, \"shape\": {}, \"device\": {}, \"member\": {}, "
        "\"schedule\": {}, \"status\": {}, \"miscompile\": {}",
        json_quote(r.area), json_quote(r.name), r.run, json_quote(r.shape), json_quote(r.device),
        json_quote(r.member), json_quote(r.schedule), json_quote(conformance::name(r.status)),
        r.miscompile ? "true" : "false");
    if (r.miscompile)
        text += fmt::format(", \"output\": {}, \"index\": {}, \"got\": {}, \"want\": {}", r.output,
                            r.index, json_quote(r.got), json_quote(r.want));
    if (!r.detail.empty()) text += fmt::format(", \"detail\": {}", json_quote(r.detail));
    return text + "}";
}

void write_json(const std::string& path, const ConformanceOptions& opt,
                const std::vector<conformance::Result>& results, double seconds) {
    const auto s = conformance::summarize(results);
    std::string text = fmt::format(
        "{{\"results\": {}, \"passed\": {}, \"skipped\": {}, \"failed\": {}, \"miscompiles\": {}, "
        "\"seed\": {}, \"runs\": {}, \"sweep\": {}, \"seconds\": {:.1f},\n\"cases\": [",
        s.results, s.passed, s.skipped, s.failed, s.miscompiles, opt.seed, opt.runs,
        opt.sweep ? "true" : "false", seconds);
    for (size_t i = 0; i < results.size(); ++i)
        text += (i ? ",\n" : "\n") + result_json(results[i]);
    write_output(path, text + "\n]}\n");
}

int run_conformance(const ConformanceOptions& opt) {
    conformance::Options o;
    for (const auto& d : opt.devices) o.devices.push_back(&find_device(d));
    o.areas = opt.areas;
    o.filter = opt.filter;
    o.runs = opt.runs;
    o.seed = opt.seed;
    o.sweep = opt.sweep;
    o.on_result = [&](const conformance::Result& r) {
        if (r.status != conformance::Status::passed || opt.verbose)
            fmt::print("{}\n", conformance::describe(r));
        std::fflush(stdout);
    };
    const auto start = std::chrono::steady_clock::now();
    const auto results = conformance::run_suite(o);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!opt.json.empty()) write_json(opt.json, opt, results, seconds);
    const auto summary = conformance::summarize(results);
    std::fprintf(stderr, "conformance took %.1f s\n", seconds);
    fmt::print("{}\n", conformance::summary_line(summary));
    return summary.failed ? 1 : 0;
}

}  // namespace

Command add_conformance_command(CLI::App& parent) {
    auto opt = std::make_shared<ConformanceOptions>();
    auto* c = parent.add_subcommand(
        "conformance", "Run the conformance suite: every case bitwise against its oracle");
    c->add_option("--device", opt->devices,
                  "device ids, indices or backends, comma-separated (default: every device)")
        ->delimiter(',');
    c->add_option("--area", opt->areas,
                  fmt::format("areas, comma-separated (default: all): {}",
                              fmt::join(conformance::areas(), ", ")))
        ->delimiter(',');
    c->add_option("--filter", opt->filter, "only cases whose area/name contains this");
    add_number_option(c, "--runs", opt->runs, "runs per case, each with its own shapes and data", 1,
                      1000);
    add_number_option(c, "--seed", opt->seed, "the suite's seed (shapes and data derive from it)",
                      uint64_t{0});
    c->add_flag("--sweep", opt->sweep,
                "run every plan member and every schedule point, not only the resolved plan");
    c->add_option("--json", opt->json, "write every result to this file as JSON");
    c->add_flag("--verbose,-v", opt->verbose, "print every result, not only failures");
    return {c, [opt] { return run_conformance(*opt); }};
}

}  // namespace kiln::cli
