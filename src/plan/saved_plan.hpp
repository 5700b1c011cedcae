// An executable rebuilt from a plan made before (a program file's, kiln/program.hpp): each launch
// lowered at the point the plan names and compiled, carried binaries first, with no partitioning,
// ranking or racing.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/compile_units.hpp"
#include "plan/executable.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// `g`'s executable on `device` from `plan` (made for a graph of g's structure), each compile unit
// whose key is among `given` loaded from its binary. kiln::Error when the plan does not fit g
// (a node position out of range).
std::shared_ptr<const Executable> executable_from_plan(const GraphView& g, Device& device,
                                                       const Plan& plan,
                                                       std::span<const UnitBinary> given);

// The binaries of e's kernels in the units executable_from_plan forms for them (compiled now where
// the disk cache does not have them).
std::vector<UnitBinary> portable_binaries(const Executable& e);

}  // namespace kiln::plan
