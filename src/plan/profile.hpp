// Profiling a resolve:
//   KILN_RESOLVE_PROFILE=1     each resolve prints its host time split into plan (graph walk,
//                              hash, cache lookup), extract (partition, cost model; on a miss
//                              split into choosing the plan, ranking its launches' points and
//                              lowering the candidates), compile, race, launch, and whether the
//                              replay cache hit
//   KILN_TIME_RANGE=start[:count]   launches number from 0 in the process, those of every
//                              resolve: the first (planning) run's and each replay's. Each in the
//                              range is timed on the device (it then waits for the device) and
//                              prints its number, kernel, schedule point and microseconds
// The last resolve's figures are kept for `kiln profile`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::plan {

struct ResolveReport {
    bool hit = false;
    double plan_us = 0, extract_us = 0, compile_us = 0, race_us = 0, launch_us = 0, total_us = 0;
    // extract_us's parts: choose_plan (partition, fusion legality and the costs of every form
    // tried), the chosen plan's points ranked by the cost model, its candidates lowered.
    double choose_us = 0, rank_us = 0, lower_us = 0;
    int launches = 0;
};

// The environment's settings, read once.
bool resolve_profile_enabled();
// Whether KILN_TIME_RANGE is set, and whether launch number `index` is in it.
bool time_range_on();
bool time_launch(uint64_t index);

// The report of the last resolve on this thread, and the slot resolve fills.
ResolveReport& last_report();

void print_report(const ResolveReport& r);
void print_launch_time(uint64_t index, const std::string& name, const std::string& schedule,
                       double us);

}  // namespace kiln::plan
