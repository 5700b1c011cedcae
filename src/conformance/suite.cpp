// suite: selects cases by area and filter, runs each on every device and run, and counts.
#include "conformance/suite.hpp"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "conformance/case.hpp"
#include "kiln/error.hpp"
#include "plan/resolve.hpp"

namespace kiln::conformance {

namespace {

std::vector<Case> all_cases() {
    std::vector<Case> out;
    for (auto group : {graph_cases, fusion_cases, op_cases})
        for (auto& c : group()) out.push_back(std::move(c));
    return out;
}

// Restores the planner's racing option (the suite ranks plans by the cost model alone: plan::sweep
// is what runs every point).
class NoRacing {
  public:
    NoRacing() : saved_(plan::options().race) { plan::options().race = false; }
    ~NoRacing() { plan::options().race = saved_; }
    NoRacing(const NoRacing&) = delete;
    NoRacing& operator=(const NoRacing&) = delete;

  private:
    bool saved_;
};

}  // namespace

const std::vector<std::string>& areas() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& c : all_cases())
            if (std::find(out.begin(), out.end(), c.area) == out.end()) out.push_back(c.area);
        return out;
    }();
    return names;
}

const char* name(Status s) {
    switch (s) {
        case Status::passed:
            return "passed";
        case Status::skipped:
            return "skipped";
        case Status::failed:
            return "failed";
    }
    return "?";
}

std::vector<Result> run_suite(const Options& options) {
    if (options.runs < 1) fail("conformance: --runs {}: expected at least 1", options.runs);
    for (const auto& a : options.areas)
        if (std::find(areas().begin(), areas().end(), a) == areas().end())
            fail("conformance: unknown area '{}'; the areas are {}", a, fmt::join(areas(), ", "));
    std::vector<Device*> devs = options.devices;
    if (devs.empty()) devs.assign(devices().begin(), devices().end());

    NoRacing no_racing;
    std::vector<Result> results;
    for (const auto& c : all_cases()) {
        if (!options.areas.empty() &&
            std::find(options.areas.begin(), options.areas.end(), c.area) == options.areas.end())
            continue;
        const std::string full = c.area + "/" + c.name;
        if (full.find(options.filter) == std::string::npos) continue;
        for (Device* d : devs)
            for (int run = 0; run < options.runs; ++run) {
                const uint64_t seed = seed_of(full, run, options.seed);
                CaseContext ctx{*d, run, seed, options.sweep, Rng(seed), {}, {}};
                ctx.base.area = c.area;
                ctx.base.name = c.name;
                ctx.base.run = run;
                ctx.base.device = d->info().id;
                ctx.report = [&](Result r) {
                    if (options.on_result) options.on_result(r);
                    results.push_back(std::move(r));
                };
                try {
                    c.run(ctx);
                } catch (const std::exception& e) {
                    Result r = ctx.base;
                    r.status = Status::failed;
                    r.detail = e.what();
                    ctx.report(std::move(r));
                }
            }
    }
    return results;
}

Summary summarize(const std::vector<Result>& results) {
    Summary s;
    for (const auto& r : results) {
        ++s.results;
        s.passed += r.status == Status::passed;
        s.skipped += r.status == Status::skipped;
        s.failed += r.status == Status::failed;
        s.miscompiles += r.miscompile;
    }
    return s;
}

std::string summary_line(const Summary& s) {
    return fmt::format("{} results: {} passed, {} skipped, {} failed; {} miscompiles", s.results,
                       s.passed, s.skipped, s.failed, s.miscompiles);
}

std::string describe(const Result& r) {
    std::string text = fmt::format("{} {}/{} run {} shape {} on {}", name(r.status), r.area, r.name,
                                   r.run, r.shape, r.device);
    if (!r.member.empty()) text += fmt::format(", member {}", r.member);
    if (!r.schedule.empty()) text += fmt::format(", schedule {}", r.schedule);
    if (r.miscompile)
        text += fmt::format(": MISCOMPILE output {} element {}: got {}, oracle {}", r.output,
                            r.index, r.got, r.want);
    if (!r.detail.empty()) text += fmt::format(" ({})", r.detail);
    return text;
}

}  // namespace kiln::conformance
