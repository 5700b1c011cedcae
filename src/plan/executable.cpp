// Running an executable: buffers, launches, the fault record.
#include "plan/executable.hpp"

#include <fmt/format.h>

#include "kiln/error.hpp"
#include "kiln/tune.hpp"
#include "ops/attention/attention.hpp"
#include "plan/lower_launch.hpp"

namespace kiln::plan {

std::shared_ptr<Executable> executable_for(const Plan& plan, const GraphView& g, Device& device) {
    auto exec = std::make_shared<Executable>();
    exec->device = &device;
    exec->nodes = g.size();
    exec->faults = plan.has_faults;
    exec->allocate = plan.materialized;
    exec->scratch = plan.scratch;
    return exec;
}

CompiledLaunch compiled_launch(const Launch& l, const Schedule& s, const LoweredLaunch& lowered,
                               std::shared_ptr<CompiledKernel> kernel, bool empty) {
    CompiledLaunch cl;
    cl.kind = l.kind;
    cl.kernel = std::move(kernel);
    cl.grid = lowered.grid;
    cl.buffers = lowered.buffers;
    cl.scalars = lowered.scalars;
    cl.empty = empty;
    cl.record.name = cl.kernel->kernel().name;
    cl.record.schedule = to_string(l.kind, s);
    return cl;
}

void allocate_run(const Executable& e, const GraphView& g, RunBuffers& run) {
    for (int n : e.allocate) {
        const graph::Node& node = g.node(n);
        run.nodes[size_t(n)] =
            std::make_shared<Buffer>(*e.device, node.dtype, static_cast<size_t>(node.numel()));
    }
    allocate_scratch(e, run);
}

void allocate_scratch(const Executable& e, RunBuffers& run) {
    run.scratch.clear();
    for (const auto& [dtype, count] : e.scratch)
        run.scratch.push_back(
            std::make_shared<Buffer>(*e.device, dtype, static_cast<size_t>(count)));
    run.faults.reset();
    if (e.faults) {
        run.faults = std::make_shared<Buffer>(*e.device, DType::i64, size_t{kFaultWords});
        run.faults->fill(0);
    }
}

RunBuffers begin_run(const Executable& e, const GraphView& g) {
    if (g.size() != e.nodes)
        fail("internal: an executable for {} nodes run on a graph of {}", e.nodes, g.size());
    RunBuffers run;
    run.nodes.resize(g.size());
    for (int leaf : g.leaves) run.nodes[size_t(leaf)] = g.node(leaf).buffer;
    allocate_run(e, g, run);
    return run;
}

std::vector<Arg> arguments(const CompiledLaunch& l, const RunBuffers& buffers) {
    std::vector<Arg> args;
    args.reserve(l.buffers.size());
    for (int b : l.buffers) {
        if (b >= 0)
            args.emplace_back(*buffers.nodes[size_t(b)]);
        else if (b == kFaultBuffer)
            args.emplace_back(*buffers.faults);
        else if (b <= kScalarBase)
            args.push_back(l.scalars[size_t(kScalarBase - b)]);
        else
            args.emplace_back(*buffers.scratch[size_t(-2 - b)]);
    }
    return args;
}

void launch(const CompiledLaunch& l, const RunBuffers& buffers) {
    if (l.empty) return;
    const auto args = arguments(l, buffers);
    l.kernel->launch(l.grid, args);
}

void check_faults(const GraphView& g, const RunBuffers& buffers) {
    if (!buffers.faults) return;
    const auto record = buffers.faults->download<int64_t>();
    if (record[0] == 0) return;
    const int node = static_cast<int>(record[0] - 1);
    const graph::Node& n = g.node(node);
    if (n.as<graph::op::Attention>())
        ops::attention_key_length_error(record[2], record[1],
                                        g.node(g.inputs[size_t(node)][1]).shape[2]);
    const auto* gather = n.as<graph::op::Gather>();
    const int axis = gather ? gather->axis : n.as<graph::op::ScatterAdd>()->axis;
    const int64_t extent =
        gather ? g.node(g.inputs[size_t(node)][0]).shape[size_t(axis)] : n.shape[size_t(axis)];
    const int64_t position = record[1];
    fail("{}: index {} at position {} of the index is out of range for axis {} of {} elements",
         gather ? (gather->select ? "index_select" : "gather") : "scatter_add", record[2], position,
         axis, extent);
}

std::vector<double> time_launches(const Executable& e, const GraphView& g) {
    RunBuffers buffers = begin_run(e, g);
    std::vector<double> us;
    for (const auto& l : e.launches) {
        us.push_back(l.empty ? 0 : time_dispatches(*e.device, TUNE_ITERS, [&] {
                                       launch(l, buffers);
                                   }) * 1e3);
    }
    return us;
}

}  // namespace kiln::plan
