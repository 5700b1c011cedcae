// Executable: a plan with a compiled kernel per launch, ready to run on any graph of the
// structure it was planned for. Running allocates the plan's intermediate and output buffers,
// launches every kernel in order and checks the fault record of gathers and scatters.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compile.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan {

// What a profile says of one launch.
struct LaunchRecord {
    std::string name;      // the kernel's name
    std::string schedule;  // the point it runs at
    double estimate_us = 0;
    bool raced = false;
    std::string not_raced;                             // why it was not raced
    std::vector<std::pair<std::string, double>> race;  // each raced point's median ms
    std::string winner_by_model;                       // the cost model's pick
};

struct CompiledLaunch {
    LaunchKind kind = LaunchKind::map;
    std::shared_ptr<CompiledKernel> kernel;
    int64_t grid = 0;
    std::vector<int> buffers;  // LoweredLaunch::buffers' bindings
    std::vector<Arg> scalars;  // LoweredLaunch::scalars
    bool empty = false;        // nothing to compute (zero elements)
    LaunchRecord record;
};

struct Executable {
    Device* device = nullptr;
    std::vector<CompiledLaunch> launches;
    std::vector<int> allocate;                       // nodes each run allocates a buffer for
    std::vector<std::pair<DType, int64_t>> scratch;  // scratch buffers each run allocates
    bool faults = false;
    size_t nodes = 0;  // the graph's size, checked on every run
    // For `kiln profile`: the fusion decisions that chose this plan (each form tried with its
    // estimate, each refusal with its reason; choose.hpp's PlanDecisions), and the refusals met
    // on the way to it.
    std::vector<std::string> fusion_decisions, fusion_refusals;
    // The plan it runs, each launch's `chosen` the point that runs (the race's winner): what a
    // program file keeps (executable_from_plan rebuilds the executable from it).
    std::shared_ptr<const Plan> plan;
};

// An executable of `plan` for graphs of g's structure on `device`, its launches still to add.
std::shared_ptr<Executable> executable_for(const Plan& plan, const GraphView& g, Device& device);

struct LoweredLaunch;
// Launch `l` at its point `s` as lowered and compiled; empty when the launch has nothing to
// compute. Its record holds the kernel's name and the point.
CompiledLaunch compiled_launch(const Launch& l, const Schedule& s, const LoweredLaunch& lowered,
                               std::shared_ptr<CompiledKernel> kernel, bool empty);

// The buffers of one run: per node (leaves hold the graph's, the rest are allocated by
// begin_run), the scratch buffers and the fault record (zeroed) when the plan has one.
struct RunBuffers {
    std::vector<std::shared_ptr<Buffer>> nodes, scratch;
    std::shared_ptr<Buffer> faults;
};

RunBuffers begin_run(const Executable& e, const GraphView& g);
// begin_run's allocations alone: the plan's intermediate and output buffers (sized from g's
// nodes), its scratch and a zeroed fault record, into `run` (whose nodes are sized and whose
// leaves are bound by the caller).
void allocate_run(const Executable& e, const GraphView& g, RunBuffers& run);
// Its scratch buffers and zeroed fault record alone.
void allocate_scratch(const Executable& e, RunBuffers& run);
// Launches one launch with the run's buffers.
void launch(const CompiledLaunch& l, const RunBuffers& buffers);
// Reads the fault record (waiting for the device) and throws kiln::Error naming the node, the
// position and the index when a gather or scatter met an index out of range.
void check_faults(const GraphView& g, const RunBuffers& buffers);

// Each launch's device time in microseconds by the tuner's protocol (warm-up, the L2 flushed on
// GPUs, the median of TUNE_ITERS), run in order on one run's buffers (0 for empty launches).
std::vector<double> time_launches(const Executable& e, const GraphView& g);

// The kernel argument list of a launch.
std::vector<Arg> arguments(const CompiledLaunch& l, const RunBuffers& buffers);

}  // namespace kiln::plan
