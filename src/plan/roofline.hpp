// roofline: the cost model. A launch at a schedule point costs
//     launch time + max(bytes / effective bandwidth, flops / effective rate, [k-steps])
// where bytes are the buffers it reads (once per pass over them) and writes, flops count the
// inlined ops (a transcendental as 20), and the effective rates scale the device's measured ones
// by how well the point can use them:
//   - SIMT devices need about bandwidth x latency (1 us) bytes in flight: threads resident at
//     once (at most 2048 per unit) times the bytes each has in flight (elements per thread x
//     vector width for maps; one element a fold step for rows; its share of a step's tiles for
//     a staged matmul point);
//   - a thread per row reads a row alone, so on SIMT devices a warp's loads of rows laid out
//     contiguously touch 32 lines at once (a quarter of the bandwidth), while rows that are
//     columns of the data (a reduced axis that is not innermost) read coalesced;
//   - thread groups sharing a row pay a barrier per level of the fold's tree above the warp;
//   - on CPUs a block's threads run as loops on one core: blocks spread over the cores, and
//     a thread group sharing a row runs its threads one after another between the tree's steps.
//   - a contraction counts 2·m·n·k flops plus those of the outputs its last tiles compute past
//     the edges; SIMT points run at a share of the rate that grows with the thread's tile (a
//     staged thread reads tm + tn shared values for tm·tn terms, at a quarter of the fma rate;
//     direct points, reading every term from memory, at a fifth of the smallest staged share),
//     and a CPU runs the point whose threads are the lanes of its vectors at the full rate, the
//     others at a sixth of it. A staged thread's independent sums (up to 4) lower the threads a
//     unit needs for its rate, and a staged block waits a latency for each k-step's tiles (the
//     third term of the max);
//   - an operand computed where the kernel reads it (a prologue) runs its maps, and an index and
//     a load per node it reads, every time an element is read (once per tile of the other side):
//     the reads after the first are its cost beyond a map launch writing the operand.
// It ranks points; the tuner races the best few and measures. The terms that differ by launch
// kind are the kind's (KindCost, src/plan/kinds/cost.hpp), beside its domain and lowering.
#pragma once

#include <vector>

#include "plan/device_facts.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

struct Estimate {
    double us = 0;
    double bytes = 0;
    double flops = 0;
};

Estimate estimate(const GraphView& g, const std::vector<char>& materialized, const Launch& launch,
                  const Schedule& s, const DeviceFacts& facts);

// The domain's points ordered from the cheapest estimate up (ties keep the domain's order).
std::vector<size_t> rank_points(const GraphView& g, const std::vector<char>& materialized,
                                const Launch& launch, const DeviceFacts& facts);

}  // namespace kiln::plan
