// kiln::Program (kiln/program.hpp): the trace of a function's first call with a signature, planned
// as one graph, and the replay that binds later calls' inputs to the kept executable.
#include "kiln/program.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "graph/node.hpp"
#include "graph/shape.hpp"
#include "kiln/error.hpp"
#include "plan/arena.hpp"
#include "plan/realize.hpp"

namespace kiln {

namespace {

thread_local int trace_depth = 0;

struct TraceScope {
    TraceScope() { ++trace_depth; }
    ~TraceScope() { --trace_depth; }
    TraceScope(const TraceScope&) = delete;
    TraceScope& operator=(const TraceScope&) = delete;
};

struct InputKey {
    const Device* device;
    DType dtype;
    Shape shape;
    bool operator==(const InputKey&) const = default;
};

struct Signature {
    std::vector<InputKey> inputs;
    bool race, thorough, fuse, wide_index;
    bool operator==(const Signature&) const = default;
};

Signature signature_of(const std::vector<Tensor>& inputs) {
    Signature s;
    const plan::Options& o = plan::options();
    s.race = o.race;
    s.thorough = o.thorough;
    s.fuse = o.fuse;
    s.wide_index = o.wide_index;
    s.inputs.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined())
            fail("compiled program: input {} is an empty tensor; expected a tensor", i);
        s.inputs.push_back({&inputs[i].device(), inputs[i].dtype(), inputs[i].shape()});
    }
    return s;
}

// Where a replay takes a leaf's buffer from: the caller's input, or data the trace captured.
struct LeafSource {
    int position = 0;
    int input = -1;
    std::shared_ptr<Buffer> captured;
};

// The buffers a signature's replays run in, kept between calls (slots by liveness; each input
// copied into a staging buffer of its own), and the launches recorded once over them: a CUDA
// graph on CUDA, the launch loop run again elsewhere.
struct Resident {
    plan::ArenaPlan arena;
    plan::RunBuffers run;
    std::unique_ptr<Recording> recording;
};

// One signature's program: the graph's structure (node copies without inputs or data, so no
// buffer of the trace's call is kept alive), its leaves' sources, the executable and where the
// outputs are; its resident buffers from the first replay on.
struct Compiled {
    Signature signature;
    Device* device = nullptr;
    plan::GraphView graph;
    std::vector<LeafSource> leaves;
    std::shared_ptr<const plan::Executable> exec;
    std::unique_ptr<Resident> resident;
    uint64_t last_use = 0;
};

plan::GraphView structure_of(const plan::GraphView& g) {
    plan::GraphView s = g;
    for (auto& node : s.nodes) {
        auto copy = std::make_shared<graph::Node>(*node);
        copy->inputs.clear();
        copy->buffer.reset();
        node = std::move(copy);
    }
    return s;
}

// Resolves the inputs that are still lazy, in one plan.
void resolve_inputs(const std::vector<Tensor>& inputs) {
    std::vector<Tensor> lazy;
    for (const Tensor& t : inputs)
        if (!t.realized()) lazy.push_back(t);
    if (!lazy.empty()) resolve(lazy);
}

}  // namespace

bool tracing() {
    return trace_depth > 0;
}

struct Program::State {
    ProgramFunction fn;
    std::vector<std::unique_ptr<Compiled>> compiled;
    uint64_t clock = 0;
    Stats stats;
};

Program::Program(ProgramFunction fn) : state_(std::make_unique<State>()) {
    if (!fn) fail("compile: no function; expected a function of tensors returning tensors");
    state_->fn = std::move(fn);
}
Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

Program::Stats Program::stats() const {
    if (!state_) fail("compiled program: used after it was moved from");
    Stats s = state_->stats;
    s.signatures = state_->compiled.size();
    for (const auto& c : state_->compiled)
        if (c->resident) s.resident_bytes += c->resident->arena.bytes();
    return s;
}

namespace {

// The first call with a signature: the function run with every resolve deferred, everything its
// outputs need planned and run as one graph, the structure kept for replays.
std::unique_ptr<Compiled> trace(const ProgramFunction& fn, const std::vector<Tensor>& inputs,
                                Signature signature, std::vector<Tensor>& outputs) {
    // Fresh leaves over the inputs' buffers, so the graph tells an input from captured data.
    std::vector<Tensor> parameters;
    parameters.reserve(inputs.size());
    for (const Tensor& t : inputs)
        parameters.push_back(Tensor::from_buffer(t.node()->buffer, t.shape()));
    {
        TraceScope scope;
        outputs = fn(parameters);
    }
    if (outputs.empty())
        fail("compiled program: the function returned no tensors; expected one or more");
    std::vector<graph::NodeRef> nodes;
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (!outputs[i].defined())
            fail("compiled program: output {} is an empty tensor; expected a tensor", i);
        if (&outputs[i].device() != &outputs[0].device())
            fail("compiled program: output {} is on {} and output 0 on {}; expected one device", i,
                 outputs[i].device().info().name, outputs[0].device().info().name);
        nodes.push_back(outputs[i].node());
    }
    auto c = std::make_unique<Compiled>();
    c->signature = std::move(signature);
    c->device = &outputs[0].device();
    const plan::GraphView g = plan::view_graph(nodes);
    for (int leaf : g.leaves) {
        LeafSource source{.position = leaf};
        for (size_t i = 0; i < parameters.size() && source.input < 0; ++i)
            if (parameters[i].node() == g.nodes[size_t(leaf)]) source.input = int(i);
        if (source.input < 0) source.captured = g.node(leaf).buffer;
        c->leaves.push_back(std::move(source));
    }
    c->graph = structure_of(g);
    bool pending = false;
    for (int o : g.outputs) pending = pending || !g.is_leaf(o);
    if (pending) {
        plan::RunBuffers run;
        plan::ResolveReport report;
        const auto t0 = std::chrono::steady_clock::now();
        c->exec = plan::run_graph(g, *c->device, run, report);
        report.total_us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        plan::last_report() = report;
        if (plan::resolve_profile_enabled()) plan::print_report(report);
        plan::check_faults(g, run);
        for (int o : g.outputs) {
            graph::Node& n = *g.nodes[size_t(o)];
            if (n.realized()) continue;
            n.buffer = run.nodes[size_t(o)];
            n.inputs.clear();
        }
    }
    return c;
}

std::unique_ptr<Resident> make_resident(const Compiled& c) {
    auto r = std::make_unique<Resident>();
    const plan::Executable& e = *c.exec;
    r->arena = plan::plan_arena(e, c.graph);
    r->run = plan::allocate_arena(e, c.graph, r->arena);
    for (const LeafSource& l : c.leaves) {
        const graph::Node& n = c.graph.node(l.position);
        r->run.nodes[size_t(l.position)] =
            l.input >= 0 ? std::make_shared<Buffer>(*c.device, n.dtype, size_t(n.numel()))
                         : l.captured;
    }
    plan::RunBuffers& run = r->run;
    r->recording = c.device->record([&e, &run] {
        for (const plan::CompiledLaunch& l : e.launches) plan::launch(l, run);
    });
    return r;
}

// A later call: the inputs copied into their staging buffers, the recording replayed, the fault
// record checked, the computed outputs copied out into fresh buffers.
std::vector<Tensor> replay(Compiled& c, const std::vector<Tensor>& inputs) {
    if (!c.exec) {  // every output is an input or captured data
        std::vector<Tensor> out;
        for (int o : c.graph.outputs)
            for (const LeafSource& l : c.leaves)
                if (l.position == o)
                    out.push_back(l.input >= 0
                                      ? inputs[size_t(l.input)]
                                      : Tensor::from_buffer(l.captured, c.graph.node(o).shape));
        return out;
    }
    if (!c.resident) c.resident = make_resident(c);
    Resident& r = *c.resident;
    Device& device = *c.device;
    for (const LeafSource& l : c.leaves)
        if (l.input >= 0) {
            Buffer& staging = *r.run.nodes[size_t(l.position)];
            device.copy(staging.memory(), inputs[size_t(l.input)].node()->buffer->memory(),
                        staging.bytes());
        }
    if (r.run.faults) r.run.faults->fill(0);
    r.recording->replay();
    plan::check_faults(c.graph, r.run);
    std::vector<Tensor> out;
    out.reserve(c.graph.outputs.size());
    for (int o : c.graph.outputs) {
        const graph::Node& n = c.graph.node(o);
        if (r.arena.slot[size_t(o)] < 0) {  // a leaf: an input or captured data
            for (const LeafSource& l : c.leaves)
                if (l.position == o)
                    out.push_back(l.input >= 0 ? inputs[size_t(l.input)]
                                               : Tensor::from_buffer(l.captured, n.shape));
            continue;
        }
        auto fresh = std::make_shared<Buffer>(device, n.dtype, size_t(n.numel()));
        device.copy(fresh->memory(), r.run.nodes[size_t(o)]->memory(), fresh->bytes());
        out.push_back(Tensor::from_buffer(std::move(fresh), n.shape));
    }
    return out;
}

}  // namespace

std::vector<Tensor> Program::operator()(const std::vector<Tensor>& inputs) {
    if (!state_) fail("compiled program: used after it was moved from");
    State& s = *state_;
    // A program called inside another's trace is part of that trace.
    if (tracing()) return s.fn(inputs);
    Signature signature = signature_of(inputs);
    resolve_inputs(inputs);
    for (auto& c : s.compiled)
        if (c->signature == signature) {
            c->last_use = ++s.clock;
            ++s.stats.replays;
            s.stats.launches = c->exec ? c->exec->launches.size() : 0;
            return replay(*c, inputs);
        }
    std::vector<Tensor> outputs;
    auto c = trace(s.fn, inputs, std::move(signature), outputs);
    c->last_use = ++s.clock;
    ++s.stats.traces;
    s.stats.launches = c->exec ? c->exec->launches.size() : 0;
    if (s.compiled.size() >= kMaxSignatures) {
        auto oldest = std::min_element(
            s.compiled.begin(), s.compiled.end(),
            [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
        s.compiled.erase(oldest);
    }
    s.compiled.push_back(std::move(c));
    return outputs;
}

}  // namespace kiln
