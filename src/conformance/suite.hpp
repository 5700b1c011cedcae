// The conformance suite: cases grouped in areas, each run on every chosen device for a number of
// runs (each run its own shapes and data, seeded from the case name, the run and the seed), every
// result compared with an oracle. With `sweep`, every member the planner can choose (each fusion
// form, every schedule point of every launch: plan::sweep) and every schedule point of the
// contraction ops is run and compared, not only the plan resolve() extracts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/device.hpp"

namespace kiln::conformance {

enum class Status { passed, skipped, failed };

// One comparison: a case's run on a device, by one member at one schedule point.
struct Result {
    std::string area, name;  // the case
    int run = 0;
    std::string shape;     // its shapes this run, e.g. "17x33"
    std::string device;    // device id (names the backend)
    std::string member;    // "resolved", a fusion form ("fused,split"), "unfused", an op's form
    std::string schedule;  // the schedule point ("" when the plan's own)
    Status status = Status::passed;
    bool miscompile = false;  // a result that differs from the oracle
    std::string detail;       // why it failed or was skipped
    int output = 0;           // miscompiles: which output, its first differing element, values
    int64_t index = -1;
    std::string got, want;
};

struct Options {
    std::vector<Device*> devices;    // empty: every device
    std::vector<std::string> areas;  // empty: every area
    std::string filter;              // only cases whose "area/name" contains it
    int runs = 3;
    uint64_t seed = 0;
    bool sweep = false;
    std::function<void(const Result&)> on_result;  // called as results arrive (progress)
};

struct Summary {
    int64_t results = 0, passed = 0, skipped = 0, failed = 0, miscompiles = 0;
};

// The areas, in the order they run.
const std::vector<std::string>& areas();

// Runs the suite. A bad option (an unknown area, runs < 1) is a kiln::Error naming it and the
// known values; a case that throws is one failed result naming the error.
std::vector<Result> run_suite(const Options& options);

Summary summarize(const std::vector<Result>& results);
// "N results: P passed, S skipped, F failed; M miscompiles"
std::string summary_line(const Summary& s);
// One line naming everything a failure needs to be reproduced and read.
std::string describe(const Result& r);
const char* name(Status s);

}  // namespace kiln::conformance
