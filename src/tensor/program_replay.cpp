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
    // The first output set is the arena's output slots; the bindings hold none between calls.
    std::vector<std::shared_ptr<Buffer>> first;
    for (int o : body_.graph.outputs)
        if (arena_.slot[size_t(o)] >= 0 &&
            std::find(outputs_.begin(), outputs_.end(), o) == outputs_.end()) {
            outputs_.push_back(o);
            first.push_back(std::move(run_.nodes[size_t(o)]));
            output_set_bytes_ += first.back()->bytes();
        }
    if (!outputs_.empty()) output_sets_.push_back(std::move(first));
    // Unbound now: the inputs are bound per call and the outputs were taken out above.
    for (const auto& b : run_.nodes)
        if (b) unbound_handles_.push_back(b->memory().handle());
    for (const auto& b : run_.scratch)
        if (b) unbound_handles_.push_back(b->memory().handle());
    if (run_.faults) unbound_handles_.push_back(run_.faults->memory().handle());
    std::sort(unbound_handles_.begin(), unbound_handles_.end());
}

size_t Replayer::resident_bytes() const {
    const size_t extra_sets = output_sets_.empty() ? 0 : output_sets_.size() - 1;
    return arena_.bytes() + fixed_bytes_ + extra_sets * output_set_bytes_;
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

std::vector<std::shared_ptr<Buffer>> Replayer::take_outputs() {
    for (const auto& set : output_sets_)
        if (std::all_of(set.begin(), set.end(), [](const auto& b) { return b.use_count() == 1; }))
            return set;
    std::vector<std::shared_ptr<Buffer>> fresh;
    for (int o : outputs_) {
        const graph::Node& n = body_.graph.node(o);
        fresh.push_back(std::make_shared<Buffer>(*body_.device, n.dtype, size_t(n.numel())));
    }
    if (output_sets_.size() < kOutputSets) output_sets_.push_back(fresh);
    return fresh;
}

Replayer::Binding::Binding(Replayer& r, const std::vector<Tensor>& inputs) : r_(r) {
    std::vector<std::shared_ptr<Buffer>> outputs = r.take_outputs();
    for (const LeafSource& l : r.body_.leaves)
        if (l.input >= 0) r.run_.nodes[size_t(l.position)] = inputs[size_t(l.input)].node()->buffer;
    for (size_t i = 0; i < r.outputs_.size(); ++i)
        r.run_.nodes[size_t(r.outputs_[i])] = std::move(outputs[i]);
}

Replayer::Binding::~Binding() {
    for (const LeafSource& l : r_.body_.leaves)
        if (l.input >= 0) r_.run_.nodes[size_t(l.position)].reset();
    for (int o : r_.outputs_) r_.run_.nodes[size_t(o)].reset();
}

std::vector<const DeviceMemory*> Replayer::bound_memory() const {
    std::vector<const DeviceMemory*> m;
    m.reserve(body_.leaves.size() + outputs_.size());
    for (const LeafSource& l : body_.leaves)
        if (l.input >= 0) m.push_back(&run_.nodes[size_t(l.position)]->memory());
    for (int o : outputs_) m.push_back(&run_.nodes[size_t(o)]->memory());
    return m;
}

Replayer::Addresses Replayer::bound_addresses() const {
    Addresses a;
    for (const DeviceMemory* m : bound_memory()) a.push_back(m->handle());
    return a;
}

void Replayer::launch_direct() {
    for (const plan::CompiledLaunch* l : per_call_) plan::launch(*l, run_);
}

bool Replayer::rebind(Recorded& r, const Addresses& a) {
    // Each address the recording was made over moves to the bound one in its place. An address
    // that is also an unbound buffer's (captured data passed as an input) is neither moved
    // from nor to: the recording could not tell its uses apart later.
    std::vector<Recording::Move> moves;
    const std::vector<const DeviceMemory*> bound = bound_memory();
    for (size_t i = 0; i < a.size(); ++i) {
        for (uintptr_t address : {r.addresses[i], a[i]})
            if (std::binary_search(unbound_handles_.begin(), unbound_handles_.end(), address))
                return false;
        moves.push_back({r.addresses[i], bound[i]});
    }
    // A launch set anew costs the host about 0.13 us on CUDA, a direct launch about 2.8 us
    // (notes/programs-moved-recordings-h100-2026-12-06.md): a move pays however many of the
    // launches it changes.
    if (!r.recording->rebind(moves)) return false;
    r.addresses = a;
    return true;
}

void Replayer::remember_recent(Addresses a) {
    recent_.push_back(std::move(a));
    if (recent_.size() > kRecentCalls) recent_.erase(recent_.begin());
}

Recording* Replayer::recording_for_bound() {
    Addresses a = bound_addresses();
    for (Recorded& r : recordings_)
        if (r.addresses == a) {
            r.last_use = ++clock_;
            return r.recording.get();
        }
    const auto seen = std::find(recent_.begin(), recent_.end(), a);
    const bool recurs = seen != recent_.end();
    if (recurs) recent_.erase(seen);
    const auto least_recent = std::min_element(
        recordings_.begin(), recordings_.end(),
        [](const Recorded& x, const Recorded& y) { return x.last_use < y.last_use; });
    if (least_recent != recordings_.end() && (!recurs || recordings_.size() >= kRecordings)) {
        // Taken out while it moves: a move that throws leaves it half moved, and it goes.
        Recorded r = std::move(*least_recent);
        recordings_.erase(least_recent);
        Addresses before = r.addresses;
        const bool moved = rebind(r, a);
        if (moved) r.last_use = ++clock_;
        recordings_.push_back(std::move(r));
        if (moved) {
            // Its old addresses recurring (buffers taking turns) get a recording of their own.
            remember_recent(std::move(before));
            return recordings_.back().recording.get();
        }
        if (!recurs) {
            remember_recent(std::move(a));
            return nullptr;
        }
        recordings_.erase(recordings_.end() - 1);  // full, and these addresses recur: replaced
    }
    // Over the bound buffers: a CUDA graph bakes their addresses in; a device that runs the
    // work again reads the bindings of the call that replays it.
    recordings_.push_back(
        {std::move(a), body_.device->record([this] { launch_direct(); }), ++clock_});
    return recordings_.back().recording.get();
}

std::vector<Tensor> Replayer::run(const std::vector<Tensor>& inputs, ReplayMode mode) {
    std::vector<Tensor> out;
    {
        const Binding bound(*this, inputs);
        if (run_.faults) run_.faults->fill(0);
        Recording* recording = mode == ReplayMode::recorded ? recording_for_bound() : nullptr;
        if (recording) {
            recording->replay();
            ++recorded_calls_;
        } else {
            launch_direct();
        }
        out.reserve(body_.graph.outputs.size());
        for (int o : body_.graph.outputs)
            out.push_back(
                arena_.slot[size_t(o)] >= 0
                    ? Tensor::from_buffer(run_.nodes[size_t(o)], body_.graph.node(o).shape)
                    : leaf_output(body_, o, inputs));
    }
    plan::check_faults(body_.graph, run_);
    return out;
}

std::vector<Tensor> Replayer::call(const std::vector<Tensor>& inputs) {
    if (mode_ != ReplayMode::undecided) return run(inputs, mode_);
    // The first replay runs direct, the second recorded, each kMeasuredRuns times to the device's
    // finish (the same inputs into the same output set: the same bits each time); the faster
    // way by its best run serves every later call. A single run's time is mostly the wait for
    // the device for a small program, whose host time decides.
    Device& device = *body_.device;
    std::vector<Tensor> out;
    const auto best_us = [&](ReplayMode mode) {
        double best = -1;
        for (int i = 0; i < kMeasuredRuns; ++i) {
            out.clear();  // its output set serves the next run
            device.synchronize();
            const double us = us_of([&] {
                out = run(inputs, mode);
                device.synchronize();
            });
            best = best < 0 ? us : std::min(best, us);
        }
        return best;
    };
    if (direct_us_ < 0) {
        direct_us_ = best_us(ReplayMode::direct);
        return out;
    }
    // Recorded before the clock starts, over the buffers this call binds (the same output set:
    // the first that no tensor holds).
    {
        const Binding bound(*this, inputs);
        recording_for_bound();
    }
    const double recorded_us = best_us(ReplayMode::recorded);
    mode_ = recorded_us < direct_us_ ? ReplayMode::recorded : ReplayMode::direct;
    if (mode_ == ReplayMode::direct) {
        recordings_.clear();
        recent_.clear();
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
