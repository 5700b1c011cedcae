// race: one launch run at its candidate points, each timed within its share of the resolve's
// race budget by the Tuner (its decision remembered in the device's TSV), and the winner kept.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/executable.hpp"
#include "plan/graph_view.hpp"
#include "plan/lower_launch.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// The Tuner's key of a launch's race: the kernel's name, the structural hash of the model's
// pick (`first`) and, for a kernel with runtime sizes, their size bucket ("n<=128"): one decision
// serves every size of the bucket (the kernels being the same), and another bucket races again.
std::string race_key(const LoweredLaunch& first);

// A size range's raced winner. A kernel with runtime sizes serves every size, so the Tuner also
// remembers, per launch structure and size bucket, the point its race chose, and another size of
// the range runs that point alone, unraced, wherever the cost model ranks the points there. The
// key is race_key of the launch lowered at its domain's first point (which the ranking does not
// move); "" for a launch without runtime sizes.
std::string range_key(const LoweredLaunch& first_point);
// The domain index of the range's remembered winner, if there is one in l's domain.
std::optional<size_t> range_winner(Device& device, const Launch& l, const std::string& key);
void remember_range_winner(Device& device, const Launch& l, const std::string& key,
                           const std::string& point);

// Runs `l` at each of `candidates` (the model's pick first, lowered as `first`) on `buffers` and
// returns the winner, its record saying how it was chosen. `budget_ms`: the device time each
// point may take (infinity: TUNE_ITERS timed runs). An in-place launch (scatter) is raced on a
// copy of its output's state, restored before every run. With `us`, the winner's device
// microseconds from one more run. The buffers end as one run of the winner leaves them.
CompiledLaunch race_launch(Device& device, const Launch& l,
                           const std::vector<CompiledLaunch>& candidates,
                           const LoweredLaunch& first, double budget_ms, RunBuffers& buffers,
                           double* us);

}  // namespace kiln::plan
