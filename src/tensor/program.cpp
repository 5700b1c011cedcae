// kiln::Program (kiln/program.hpp): the trace of a function's first call with a signature, planned
// as one graph, and the signatures kept for later calls (program_replay.cpp runs those).
#include "kiln/program.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/node.hpp"
#include "graph/shape.hpp"
#include "kiln/error.hpp"
#include "plan/resolve.hpp"
#include "plan/saved_plan.hpp"
#include "tensor/program_file.hpp"
#include "tensor/program_replay.hpp"
#include "tensor/program_saved.hpp"

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
};

struct Signature {
    std::vector<InputKey> inputs;
    bool race, thorough, fuse, wide_index;
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

// Whether a call with `inputs` under the planner's options has signature s (signature_of's,
// compared without building one).
bool takes(const Signature& s, const std::vector<Tensor>& inputs) {
    const plan::Options& o = plan::options();
    if (s.race != o.race || s.thorough != o.thorough || s.fuse != o.fuse ||
        s.wide_index != o.wide_index || s.inputs.size() != inputs.size())
        return false;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const InputKey& k = s.inputs[i];
        if (!inputs[i].defined() || k.device != &inputs[i].device() ||
            k.dtype != inputs[i].dtype() || k.shape != inputs[i].shape())
            return false;
    }
    return true;
}

// One signature's program: its body (program_replay.hpp) and, from its first replay on, the
// replayer that holds its buffers.
struct Compiled {
    Signature signature;
    program::Body body;
    std::unique_ptr<program::Replayer> replayer;
    uint64_t last_use = 0;
    int saved = -1;  // the saved signature it was built from (State::saved)
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
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined())
            fail("compiled program: input {} is an empty tensor; expected a tensor", i);
        if (!inputs[i].resolved()) lazy.push_back(inputs[i]);
    }
    if (!lazy.empty()) resolve(lazy);
}

// Checks the declared buckets (kiln/program.hpp) before any call.
void check_buckets(const std::vector<Bucket>& buckets) {
    for (size_t b = 0; b < buckets.size(); ++b) {
        const Bucket& bucket = buckets[b];
        if (bucket.sizes.empty())
            fail("compile: bucket {} (input {}, axis {}) has no sizes; expected one or more", b,
                 bucket.input, bucket.axis);
        for (size_t i = 0; i < bucket.sizes.size(); ++i)
            if (bucket.sizes[i] <= 0 || (i > 0 && bucket.sizes[i] <= bucket.sizes[i - 1]))
                fail(
                    "compile: bucket {} (input {}, axis {}) has sizes {}; expected positive "
                    "sizes in ascending order",
                    b, bucket.input, bucket.axis, fmt::join(bucket.sizes, ", "));
        for (size_t other = 0; other < b; ++other)
            if (buckets[other].input == bucket.input && buckets[other].axis == bucket.axis)
                fail("compile: buckets {} and {} are both for input {}'s axis {}; expected one",
                     other, b, bucket.input, bucket.axis);
    }
}

// The inputs with each bucketed axis padded with zeros to its bucket (lazy: resolved with the
// other lazy inputs). Whether any was padded in `padded`.
std::vector<Tensor> bucketed(const std::vector<Tensor>& inputs, const std::vector<Bucket>& buckets,
                             bool& padded) {
    std::vector<Tensor> out = inputs;
    padded = false;
    for (const Bucket& bucket : buckets) {
        if (bucket.input >= inputs.size())
            fail(
                "compiled program: a bucket is declared for input {}, but the call has {} "
                "input{}",
                bucket.input, inputs.size(), inputs.size() == 1 ? "" : "s");
        Tensor& t = out[bucket.input];
        if (!t.defined()) continue;  // signature_of names it
        const int64_t rank = static_cast<int64_t>(t.shape().size());
        const int64_t axis = bucket.axis < 0 ? bucket.axis + rank : bucket.axis;
        if (axis < 0 || axis >= rank)
            fail("compiled program: input {} has rank {}; its bucket is for axis {}", bucket.input,
                 rank, bucket.axis);
        const int64_t size = t.shape()[size_t(axis)];
        const auto fits = std::lower_bound(bucket.sizes.begin(), bucket.sizes.end(), size);
        if (fits == bucket.sizes.end())
            fail(
                "compiled program: input {}'s axis {} has {} elements; its bucket's sizes go up "
                "to {}",
                bucket.input, bucket.axis, size, bucket.sizes.back());
        if (*fits == size) continue;
        std::vector<std::pair<int64_t, int64_t>> widths(size_t(rank), {0, 0});
        widths[size_t(axis)].second = *fits - size;
        t = t.pad(widths);
        padded = true;
    }
    return out;
}

}  // namespace

bool tracing() {
    return trace_depth > 0;
}

struct Program::State {
    ProgramFunction fn;  // empty for a program loaded from a file
    ProgramOptions options;
    std::vector<std::unique_ptr<Compiled>> compiled;
    uint64_t clock = 0;
    Stats stats;
    // A loaded file's signatures (each built on a device at its first call there), the data
    // they and the traces captured, and the file's annotation.
    std::vector<program::SavedSignature> saved;
    program::BlobTable blobs;
    std::string annotation;
};

Program::Program(ProgramFunction fn, ProgramOptions options) : state_(std::make_unique<State>()) {
    if (!fn) fail("compile: no function; expected a function of tensors returning tensors");
    check_buckets(options.buckets);
    state_->fn = std::move(fn);
    state_->options = std::move(options);
}
Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

Program::Stats Program::stats() const {
    if (!state_) fail("compiled program: used after it was moved from");
    Stats s = state_->stats;
    s.signatures = state_->compiled.size();
    for (const auto& c : state_->compiled)
        if (c->replayer) {
            s.resident_bytes += c->replayer->resident_bytes();
            s.run_once += c->replayer->run_once();
            s.recorded += c->replayer->recorded_calls();
        }
    return s;
}

namespace {

// Plans g (outputs pending on `device`) as one graph and runs it once, each computed output
// node keeping its buffer. The executable; null when every output is a leaf.
std::shared_ptr<const plan::Executable> plan_and_run(const plan::GraphView& g, Device& device) {
    bool pending = false;
    for (int o : g.outputs) pending = pending || !g.is_leaf(o);
    if (!pending) return nullptr;
    plan::RunBuffers run;
    plan::ResolveReport report;
    const auto t0 = std::chrono::steady_clock::now();
    auto exec = plan::run_graph(g, device, run, report);
    report.total_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    plan::last_report() = report;
    if (plan::resolve_profile_enabled()) plan::print_report(report);
    plan::check_faults(g, run);
    for (int o : g.outputs) {
        graph::Node& n = *g.nodes[size_t(o)];
        if (n.resolved()) continue;
        n.buffer = run.nodes[size_t(o)];
        n.inputs.clear();
    }
    return exec;
}

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
    program::Body& body = c->body;
    body.device = &outputs[0].device();
    const plan::GraphView g = plan::view_graph(nodes);
    for (int leaf : g.leaves) {
        program::LeafSource source{.position = leaf};
        for (size_t i = 0; i < parameters.size() && source.input < 0; ++i)
            if (parameters[i].node() == g.nodes[size_t(leaf)]) source.input = int(i);
        if (source.input < 0) source.captured = g.node(leaf).buffer;
        body.leaves.push_back(std::move(source));
    }
    body.graph = structure_of(g);
    body.exec = plan_and_run(g, *body.device);
    return c;
}

// The device a call of saved signature `s` runs on: its inputs' (one device), or for a
// signature without inputs the first device its plans were made for, else the CPU.
Device& device_of_call(const program::SavedSignature& s, const std::vector<Tensor>& inputs) {
    for (size_t i = 1; i < inputs.size(); ++i)
        if (&inputs[i].device() != &inputs[0].device())
            fail(
                "compiled program: input {} is on {} and input 0 on {}; a loaded program runs "
                "on one device",
                i, inputs[i].device().info().name, inputs[0].device().info().name);
    if (!inputs.empty()) return inputs[0].device();
    for (const program::SavedPlan& p : s.plans)
        for (Device* d : devices())
            if (d->info().id == p.device_id) return *d;
    return cpu_device();
}

std::string describe_types(const std::vector<std::pair<DType, graph::Shape>>& types) {
    std::vector<std::string> parts;
    for (const auto& [dtype, shape] : types)
        parts.push_back(fmt::format("{}[{}]", name(dtype), fmt::join(shape, ", ")));
    return fmt::format("({})", fmt::join(parts, ", "));
}

std::string describe_inputs(const std::vector<Tensor>& inputs) {
    std::vector<std::pair<DType, graph::Shape>> types;
    for (const Tensor& t : inputs) types.emplace_back(t.dtype(), t.shape());
    return describe_types(types);
}

std::string describe_saved(const std::vector<program::SavedSignature>& saved) {
    std::vector<std::string> parts;
    for (const auto& s : saved) parts.push_back(describe_types(s.inputs));
    return parts.empty() ? "no signatures" : fmt::format("{}", fmt::join(parts, " and "));
}

// Whether saved signature s takes inputs of these dtypes and shapes.
bool takes(const program::SavedSignature& s, const std::vector<Tensor>& inputs) {
    if (s.inputs.size() != inputs.size()) return false;
    for (size_t i = 0; i < inputs.size(); ++i)
        if (s.inputs[i].first != inputs[i].dtype() || s.inputs[i].second != inputs[i].shape())
            return false;
    return true;
}

// The saved signature for a call: one with a plan for the call's device if any does, else the
// first that takes its inputs; -1 when none does.
int saved_for(const std::vector<program::SavedSignature>& saved,
              const std::vector<Tensor>& inputs) {
    int first = -1;
    for (size_t i = 0; i < saved.size(); ++i) {
        if (!takes(saved[i], inputs)) continue;
        if (first < 0) first = int(i);
        if (program::plan_for(saved[i], device_of_call(saved[i], inputs), plan::options()))
            return int(i);
    }
    return first;
}

// The first call on a device of a saved signature: its graph built there, run by the saved
// plan when one was made for this device model (no planning, racing or, with its binaries,
// compiling), else planned now as a trace is.
std::unique_ptr<Compiled> from_saved(const program::SavedSignature& s, int index,
                                     program::BlobTable& blobs, const std::vector<Tensor>& inputs,
                                     Signature signature, std::vector<Tensor>& outputs) {
    Device& device = device_of_call(s, inputs);
    program::BuiltGraph built = program::build_graph(s, device, inputs, blobs);
    auto c = std::make_unique<Compiled>();
    c->signature = std::move(signature);
    c->saved = index;
    program::Body& body = c->body;
    body.device = &device;
    body.leaves = std::move(built.leaves);
    body.graph = structure_of(built.view);
    if (const program::SavedPlan* p = program::plan_for(s, device, plan::options())) {
        body.exec = plan::executable_from_plan(built.view, device, p->plan, p->units);
        outputs = program::replay(body, c->replayer, inputs);
        return c;
    }
    body.exec = plan_and_run(built.view, device);
    outputs.clear();
    for (int o : built.view.outputs)
        outputs.push_back(Tensor::from_buffer(built.view.node(o).buffer, built.view.node(o).shape));
    return c;
}

}  // namespace

void Program::save(const std::string& path, const std::string& annotation) const {
    if (!state_) fail("compiled program: used after it was moved from");
    State& s = *state_;
    if (s.compiled.empty() && s.saved.empty())
        fail(
            "compiled program: nothing to save to {}; call it once first (a program is traced "
            "by its first call with each signature)",
            path);
    program::SavedProgram file;
    file.buckets = s.options.buckets;
    file.annotation = annotation;
    file.signatures = s.saved;
    for (const auto& c : s.compiled) {
        std::vector<std::pair<DType, graph::Shape>> types;
        for (const InputKey& k : c->signature.inputs) types.emplace_back(k.dtype, k.shape);
        const plan::Options options{.race = c->signature.race,
                                    .thorough = c->signature.thorough,
                                    .fuse = c->signature.fuse,
                                    .wide_index = c->signature.wide_index};
        if (c->saved < 0) {
            file.signatures.push_back(program::save_signature(c->body, types, options, s.blobs));
            continue;
        }
        // A saved signature built on a device: its plan there joins (or replaces) its plans.
        auto plan = program::save_plan(c->body, options);
        if (!plan) continue;
        auto& plans = file.signatures[size_t(c->saved)].plans;
        std::erase_if(plans, [&](const program::SavedPlan& p) {
            return p.device_id == plan->device_id && p.toolchain == plan->toolchain &&
                   p.options.fuse == options.fuse && p.options.wide_index == options.wide_index;
        });
        plans.push_back(std::move(*plan));
    }
    file.blobs = s.blobs.blobs;
    program::write_program_file(path, file);
}

const std::string& Program::annotation() const {
    if (!state_) fail("compiled program: used after it was moved from");
    return state_->annotation;
}

Program::Program() : state_(std::make_unique<State>()) {}

Program Program::load(const std::string& path) {
    program::SavedProgram file = program::read_program_file(path);
    check_buckets(file.buckets);
    Program p;
    p.state_->options.buckets = std::move(file.buckets);
    p.state_->annotation = std::move(file.annotation);
    p.state_->saved = std::move(file.signatures);
    p.state_->blobs.blobs = std::move(file.blobs);
    return p;
}

std::vector<Tensor> Program::operator()(const std::vector<Tensor>& given) {
    if (!state_) fail("compiled program: used after it was moved from");
    State& s = *state_;
    bool padded = false;
    std::vector<Tensor> padded_inputs;  // only where buckets are declared: no copy otherwise
    if (!s.options.buckets.empty()) padded_inputs = bucketed(given, s.options.buckets, padded);
    const std::vector<Tensor>& inputs = s.options.buckets.empty() ? given : padded_inputs;
    s.stats.padded += padded;
    // A program called inside another's trace is part of that trace.
    if (tracing()) return s.fn(inputs);
    resolve_inputs(inputs);
    for (auto& c : s.compiled)
        if (takes(c->signature, inputs)) {
            c->last_use = ++s.clock;
            ++s.stats.replays;
            s.stats.launches = c->body.exec ? c->body.exec->launches.size() : 0;
            return program::replay(c->body, c->replayer, inputs);
        }
    Signature signature = signature_of(inputs);
    std::vector<Tensor> outputs;
    std::unique_ptr<Compiled> c;
    if (const int saved = saved_for(s.saved, inputs); saved >= 0)
        c = from_saved(s.saved[size_t(saved)], saved, s.blobs, inputs, std::move(signature),
                       outputs);
    else if (s.fn)
        c = trace(s.fn, inputs, std::move(signature), outputs);
    else
        fail(
            "compiled program: no signature of the loaded program takes {}; it was saved for "
            "{}",
            describe_inputs(inputs), describe_saved(s.saved));
    c->last_use = ++s.clock;
    ++s.stats.traces;
    s.stats.launches = c->body.exec ? c->body.exec->launches.size() : 0;
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
