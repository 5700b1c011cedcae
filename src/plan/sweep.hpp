// The member sweep: runs every alternative the planner can choose for a graph — each fold group
// fused and split, its generators inlined and stored, and every schedule point of every launch —
// and hands each run's outputs to a
// check. Outputs are filled with a poison pattern before every run, so a member that leaves an
// element unwritten is caught. Nothing is resolved and no cache or tuner is touched.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/node.hpp"
#include "kiln/ir.hpp"

namespace kiln::plan {

struct Member {
    std::string fusion;  // "fused", "split" or per group "fused,split,..."; "... generators stored"
    std::string launch;  // the launch varied ("" when all run at their default point)
    std::string schedule;  // its point
};

// Which members a sweep runs: every form at every point, or every form at its default points.
enum class SweepPoints { every, defaults };

// Calls `check(member, outputs)` for every member (each output as the bytes the device holds).
// Returns how many members ran.
int sweep(const std::vector<graph::NodeRef>& outputs,
          const std::function<void(const Member&, const std::vector<std::vector<uint8_t>>&)>& check,
          SweepPoints points = SweepPoints::every);

// Every kernel the members launch (each launch of each form at each point), e.g. to compile
// them for a backend without running them.
std::vector<ir::Kernel> member_kernels(const std::vector<graph::NodeRef>& outputs);

}  // namespace kiln::plan
