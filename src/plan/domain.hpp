// domain: the schedule points a launch may run at. Every point computes the same bits; none is
// ever left out for a launch to have only one.
//   map:     256 threads a block x elements per thread {1, 2, 4, 8} (a grid apart, so a block's
//            threads stay on consecutive elements) x vector width {1, 4} (4 where the element
//            count is a multiple of 4: consecutive elements per thread, one wide access where a
//            buffer is read or written contiguously)
//   row:     a thread per row (blocks of 64 or 256), a warp (32 threads) per row, a block of 128 or
//            256 threads per row — threads per row never above the fold's lanes — the shared
//            ones with 1 or 4 rounds of the fold's loads in flight a step — and, for rows of at
//            most 64 elements a lane, a thread a lane keeping its elements in locals
//   segments: as row, with a segment of a row in place of the row
//   scatter: blocks of 64, 128 or 256 threads, a thread per column
#pragma once

#include <vector>

#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

std::vector<Schedule> domain_of(const Launch& launch, const GraphView& g);

}  // namespace kiln::plan
