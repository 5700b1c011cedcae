// domain: the schedule points a launch may run at, its kind's (src/plan/kinds/: each kind's
// file states its domain). Every point computes the same bits; none is ever left out for a
// launch to have only one.
#pragma once

#include <vector>

#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

std::vector<Schedule> domain_of(const Launch& launch, const GraphView& g);

}  // namespace kiln::plan
