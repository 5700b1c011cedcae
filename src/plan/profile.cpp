// Profiling switches from the environment and their printouts (stderr).
#include "plan/profile.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "kiln/error.hpp"

namespace kiln::plan {
namespace {

struct Range {
    bool on = false;
    uint64_t start = 0, count = UINT64_MAX;
};

Range parse_range() {
    Range r;
    const char* env = std::getenv("KILN_TIME_RANGE");
    if (!env || !*env) return r;
    const std::string text = env;
    const auto colon = text.find(':');
    try {
        size_t used = 0;
        r.start = std::stoull(text.substr(0, colon), &used);
        if (used != (colon == std::string::npos ? text.size() : colon))
            throw std::invalid_argument("");
        if (colon != std::string::npos) {
            r.count = std::stoull(text.substr(colon + 1), &used);
            if (used != text.size() - colon - 1) throw std::invalid_argument("");
        }
    } catch (const std::exception&) {
        fail("KILN_TIME_RANGE='{}'; expected start or start:count (launch numbers from 0)", text);
    }
    r.on = true;
    return r;
}

const Range& time_range() {
    static const Range range = parse_range();
    return range;
}

}  // namespace

bool resolve_profile_enabled() {
    static const bool on = [] {
        const char* env = std::getenv("KILN_RESOLVE_PROFILE");
        return env && *env && std::string(env) != "0";
    }();
    return on;
}

bool time_range_on() {
    return time_range().on;
}

bool time_launch(uint64_t index) {
    const Range& range = time_range();
    return range.on && index >= range.start && index - range.start < range.count;
}

ResolveReport& last_report() {
    thread_local ResolveReport report;
    return report;
}

void print_report(const ResolveReport& r) {
    const std::string parts = r.hit ? ""
                                    : fmt::format(" (choose {:.1f}, rank {:.1f}, lower {:.1f})",
                                                  r.choose_us, r.rank_us, r.lower_us);
    std::fputs(fmt::format("kiln: resolve {} {:.1f} us: plan {:.1f}, extract {:.1f}{}, compile "
                           "{:.1f}, race {:.1f}, launch {:.1f} ({} launches)\n",
                           r.hit ? "hit" : "miss", r.total_us, r.plan_us, r.extract_us, parts,
                           r.compile_us, r.race_us, r.launch_us, r.launches)
                   .c_str(),
               stderr);
}

void print_launch_time(uint64_t index, const std::string& name, const std::string& schedule,
                       double us) {
    std::fputs(fmt::format("kiln: launch {} {} {} {:.2f} us\n", index, name, schedule, us).c_str(),
               stderr);
}

}  // namespace kiln::plan
