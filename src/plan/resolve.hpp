// resolve: what Tensor::resolve() runs. The graph behind the requested tensors is looked up in
// the plan replay cache (its structure, dtypes, shapes, the device and the options); on a miss it
// is partitioned into launches (fusion chosen per fold group by the cost model), each launch's
// schedule ranked by the cost model and the best few raced by the Tuner (remembered in the
// device's TSV), compiled in one compile unit, and run; on a hit the cached executable runs
// directly. Either way each requested node keeps its buffer and becomes a leaf.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/node.hpp"
#include "plan/executable.hpp"
#include "plan/graph_view.hpp"
#include "plan/profile.hpp"

namespace kiln::plan {

void resolve(const std::vector<graph::NodeRef>& outputs);

// The passes without the outputs' bookkeeping: runs `g` (pending nodes on one device) with the
// replay cache's executable for its structure, or plans, compiles and races one now (running g
// in doing so) and remembers it. `buffers` receives the run's buffers (outputs included);
// `report` its plan, extract, compile, race and launch times. The fault record is not checked.
std::shared_ptr<const Executable> run_graph(const GraphView& g, Device& device, RunBuffers& buffers,
                                            ResolveReport& report);

// Process-wide planner options, read from the environment at first use:
//   KILN_RACE      1 (the default): race the best kRaceTop points of each launch, all of a
//                  resolve's within about kRaceBudgetMs of device time; thorough: time each
//                  TUNE_ITERS times, as the ops' tuners do; 0: rank by the cost model only
//   KILN_FUSE=0    run every fold group split, contractions without epilogues or prologues
//                  (default: the cost model chooses)
//   KILN_WIDE_INDEX=1  index arithmetic in i64 even where i32 would do (the path tensors past
//                  2^31 elements take, for testing it on small ones)
struct Options {
    bool race = true;
    bool thorough = false;  // KILN_RACE=thorough
    bool fuse = true;
    bool wide_index = false;
};
Options& options();  // options_from_environment() at first use
Options options_from_environment();
inline constexpr int kRaceTop = 3;
inline constexpr double kRaceBudgetMs = 1000;

// Counters for tests and profiles.
struct Counters {
    uint64_t hits = 0;      // resolves answered by the replay cache
    uint64_t misses = 0;    // resolves that planned
    uint64_t launches = 0;  // kernels launched by resolves
};
Counters counters();
// Forgets every cached plan (compiled kernels stay cached by compile()).
void clear_plan_cache();
// The executable the last resolve on this thread ran (for profiles).
std::shared_ptr<const Executable> last_executable();

}  // namespace kiln::plan
