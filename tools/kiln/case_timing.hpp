// Timing one built-in graph case on a device, shared by `kiln profile` and `kiln bench`: the
// miss (plan, race, compile, run) checked against the graph oracle, the host time of resolves
// answered from the replay cache, and each launch's device time by the tuner's protocol.
#pragma once

#include <memory>
#include <vector>

#include "plan/executable.hpp"
#include "plan/profile.hpp"
#include "workloads/cases.hpp"

namespace kiln::cli {

struct CaseTiming {
    plan::ResolveReport miss;                      // the first resolve: compile and race inside
    std::shared_ptr<const plan::Executable> exec;  // what the miss built
    bool checked = false;    // the oracle ran (not for contractions past kOracleTerms, nor for
                             // a case whose results lie within a bound of it: Case::exact)
    bool identical = false;  // every output bit-identical to the oracle (true when not checked)
    double hit_us = 0;       // median host us of a replay-hit resolve
    double compiled_us = 0;  // median host us of a call of the case compiled (kiln::compile)
    bool compiled_identical = false;  // its outputs bit-identical to the resolve's
    std::vector<double> launch_us;    // device us of each launch
    double device_us() const;         // their sum
};

// The most multiply-adds of contractions the host oracle runs to check a case (a few seconds).
constexpr double kOracleTerms = double(int64_t{1} << 30);

// Resolves `c` once (a miss), `hits` times more (replay hits, median host time), calls it compiled
// `hits` times after its trace (median host time), then times the launches on the device.
CaseTiming time_case(Device& d, const workloads::Case& c, int hits);

}  // namespace kiln::cli
