// program_replay: a compiled program's later calls, direct or recorded (see program_replay.hpp).
#include "tensor/program_replay.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "kiln/error.hpp"

#include "graph/node.hpp"
#include "plan/lower_launch.hpp"

namespace kiln::program {

namespace {

// KILN_REPLAY: direct, recorded, or measure (the default: the faster of the two where the
// device records graphs, direct elsewhere).
ReplayMode mode_from_environment(const Device& device) {
    const char* env = std::getenv("KILN_REPLAY");
    const std::string value = env ? env : "";
    if (value == "direct") return ReplayMode::direct;
    if (value == "recorded") return ReplayMode::recorded;
    if (!value.empty() && value != "measure")
        fail(
            "KILN_REPLAY is '{}'; expected direct, recorded or measure (the default: the faster "
            "of the two, timed at a program's first replays, where the device records graphs)",
            value);
    return device.records_graphs() ? ReplayMode::undecided : ReplayMode::direct;
}

double us_of(const std::function<void()>& work) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Output o of a call when it is a leaf: the caller's input, or captured data.
Tensor leaf_output(const Body& body, int o, const std::vector<Tensor>& inputs) {
    for (const LeafSource& l : body.leaves)
        if (l.position == o)
            return l.input >= 0 ? inputs[size_t(l.input)]
                                : Tensor::from_buffer(l.captured, body.graph.node(o).shape);
    fail("internal: compiled program output %{} is neither computed nor a leaf", o);
}

// Per launch of `body`: whether every call computes the same values with it. A launch qualifies
// when everything it reads is captured data or written by such launches, it is the only writer
// of what it writes, none of which is an output, and it has no fault record or scratch buffer.
std::vector<char> launches_run_once(const Body& body) {
    const plan::Executable& e = *body.exec;
    const plan::GraphView& g = body.graph;
    std::vector<char> once(e.launches.size(), 0);
    if (!e.plan || e.plan->launches.size() != e.launches.size()) return once;
    std::vector<int> writers(g.size(), 0);
    for (const plan::Launch& l : e.plan->launches)
        for (int o : l.outputs) ++writers[size_t(o)];
    std::vector<char> fixed(g.size(), 0);
    for (const LeafSource& l : body.leaves) fixed[size_t(l.position)] = l.input < 0;
    std::vector<char> output(g.size(), 0);
    for (int o : g.outputs) output[size_t(o)] = 1;
    for (size_t i = 0; i < e.launches.size(); ++i) {
        const std::vector<int>& writes = e.plan->launches[i].outputs;
        auto written = [&](int b) {
            return std::find(writes.begin(), writes.end(), b) != writes.end();
        };
        bool same = !writes.empty();
        for (int o : writes) same = same && writers[size_t(o)] == 1 && !output[size_t(o)];
        for (int b : e.launches[i].buffers)
            same = same && (b >= 0 ? written(b) || fixed[size_t(b)] : b <= plan::kScalarBase);
        if (!same) continue;
        once[i] = 1;
        for (int o : writes) fixed[size_t(o)] = 1;
    }
    return once;
}

}  // namespace

Replayer::Replayer(const Body& body)
    : body_(body),
      arena_(plan::plan_arena(*body.exec, body.graph)),
      run_(plan::allocate_arena(*body.exec, body.graph, arena_)),
      mode_(mode_from_environment(*body.device)) {
    for (const LeafSource& l : body_.leaves)
        if (l.input < 0) run_.nodes[size_t(l.position)] = l.captured;
    run_fixed_launches();
    for (int o : body_.graph.outputs)
        if (arena_.slot[size_t(o)] >= 0 &&
            std::find(outputs_.begin(), outputs_.end(), o) == outputs_.end()) {
            outputs_.push_back(o);
            output_slots_.push_back(run_.nodes[size_t(o)]);
        }
}

void Replayer::run_fixed_launches() {
    const plan::Executable& e = *body_.exec;
    const std::vector<char> once = launches_run_once(body_);
    for (size_t i = 0; i < e.launches.size(); ++i) {
        if (!once[i]) {
            per_call_.push_back(&e.launches[i]);
            continue;
        }
        // Buffers of their own: the arena's slots are shared with what later calls compute.
        for (int o : e.plan->launches[i].outputs) {
            const graph::Node& n = body_.graph.node(o);
            run_.nodes[size_t(o)] =
                std::make_shared<Buffer>(*body_.device, n.dtype, size_t(n.numel()));
            fixed_bytes_ += run_.nodes[size_t(o)]->bytes();
        }
        plan::launch(e.launches[i], run_);
    }
}

std::vector<Tensor> Replayer::direct(const std::vector<Tensor>& inputs) {
    Device& device = *body_.device;
    for (const LeafSource& l : body_.leaves)
        if (l.input >= 0) run_.nodes[size_t(l.position)] = inputs[size_t(l.input)].node()->buffer;
    for (int o : outputs_) {
        const graph::Node& n = body_.graph.node(o);
        run_.nodes[size_t(o)] = std::make_shared<Buffer>(device, n.dtype, size_t(n.numel()));
    }
    if (run_.faults) run_.faults->fill(0);
    for (const plan::CompiledLaunch* l : per_call_) plan::launch(*l, run_);
    std::vector<Tensor> out;
    out.reserve(body_.graph.outputs.size());
    for (int o : body_.graph.outputs)
        out.push_back(arena_.slot[size_t(o)] >= 0
                          ? Tensor::from_buffer(run_.nodes[size_t(o)], body_.graph.node(o).shape)
                          : leaf_output(body_, o, inputs));
    // The caller's buffers are not kept past the call.
    for (const LeafSource& l : body_.leaves)
        if (l.input >= 0) run_.nodes[size_t(l.position)].reset();
    for (int o : outputs_) run_.nodes[size_t(o)].reset();
    plan::check_faults(body_.graph, run_);
    return out;
}

void Replayer::prepare_recording() {
    // The arena's buffers, its outputs' slots, and a staging buffer per input.
    staged_ = run_;
    for (size_t i = 0; i < outputs_.size(); ++i)
        staged_.nodes[size_t(outputs_[i])] = output_slots_[i];
    for (const LeafSource& l : body_.leaves) {
        const graph::Node& n = body_.graph.node(l.position);
        staged_.nodes[size_t(l.position)] =
            l.input >= 0 ? std::make_shared<Buffer>(*body_.device, n.dtype, size_t(n.numel()))
                         : l.captured;
    }
    plan::RunBuffers& staged = staged_;
    const auto& launches = per_call_;
    recording_ = body_.device->record([&launches, &staged] {
        for (const plan::CompiledLaunch* l : launches) plan::launch(*l, staged);
    });
}

std::vector<Tensor> Replayer::recorded(const std::vector<Tensor>& inputs) {
    Device& device = *body_.device;
    for (const LeafSource& l : body_.leaves)
        if (l.input >= 0) {
            Buffer& staging = *staged_.nodes[size_t(l.position)];
            device.copy(staging.memory(), inputs[size_t(l.input)].node()->buffer->memory(),
                        staging.bytes());
        }
    if (staged_.faults) staged_.faults->fill(0);
    recording_->replay();
    plan::check_faults(body_.graph, staged_);
    std::vector<Tensor> out;
    out.reserve(body_.graph.outputs.size());
    for (int o : body_.graph.outputs) {
        if (arena_.slot[size_t(o)] < 0) {
            out.push_back(leaf_output(body_, o, inputs));
            continue;
        }
        const graph::Node& n = body_.graph.node(o);
        auto fresh = std::make_shared<Buffer>(device, n.dtype, size_t(n.numel()));
        device.copy(fresh->memory(), staged_.nodes[size_t(o)]->memory(), fresh->bytes());
        out.push_back(Tensor::from_buffer(std::move(fresh), n.shape));
    }
    return out;
}

std::vector<Tensor> Replayer::call(const std::vector<Tensor>& inputs) {
    switch (mode_) {
        case ReplayMode::direct:
            return direct(inputs);
        case ReplayMode::recorded:
            if (!recording_) prepare_recording();
            return recorded(inputs);
        case ReplayMode::undecided:
            break;
    }
    // The first replay runs direct, the second recorded, each timed to the device's finish; the
    // faster way serves every later call.
    Device& device = *body_.device;
    std::vector<Tensor> out;
    if (direct_us_ < 0) {
        device.synchronize();
        direct_us_ = us_of([&] {
            out = direct(inputs);
            device.synchronize();
        });
        return out;
    }
    prepare_recording();
    device.synchronize();
    const double recorded_us = us_of([&] {
        out = recorded(inputs);
        device.synchronize();
    });
    mode_ = recorded_us < direct_us_ ? ReplayMode::recorded : ReplayMode::direct;
    if (mode_ == ReplayMode::direct) {
        recording_.reset();
        staged_ = {};
    }
    return out;
}

std::vector<Tensor> replay(const Body& body, std::unique_ptr<Replayer>& replayer,
                           const std::vector<Tensor>& inputs) {
    if (!body.exec) {  // every output is an input or captured data
        std::vector<Tensor> out;
        for (int o : body.graph.outputs) out.push_back(leaf_output(body, o, inputs));
        return out;
    }
    if (!replayer) replayer = std::make_unique<Replayer>(body);
    return replayer->call(inputs);
}

}  // namespace kiln::program
