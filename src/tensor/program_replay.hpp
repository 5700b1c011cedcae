// program_replay: one signature of a compiled program (kiln/program.hpp) and how its later calls
// run. Its buffers are kept between calls: intermediates in slots shared by liveness
// (plan/arena.hpp), captured data bound once, and a few sets of output buffers that serve again
// once no tensor holds them (so outputs stay values). A call binds the caller's inputs and an
// output set in place and runs one of two ways, the faster of them measured at the first two
// replays on devices that record graphs (CUDA), direct elsewhere:
//   direct     the launches issued one by one;
//   recorded   the launches replayed as one recording (a CUDA graph, which bakes in its buffers'
//              addresses). The first call makes one; a call at other addresses moves the least
//              recently used recording's kernel arguments to its buffers in place (rebind), or
//              records anew where its addresses were a recent call's (a loop's buffers recur,
//              and each such set keeps a recording); a call whose addresses no recording can
//              take runs direct.
// Launches that read only captured data (and what such launches wrote), such as a weight's
// transposed copy, give the same values every call: they run once, when the replayer is made,
// into buffers of their own, and no call runs them again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/tensor.hpp"
#include "plan/arena.hpp"
#include "plan/executable.hpp"
#include "plan/graph_view.hpp"

namespace kiln::program {

// Where a call takes a leaf's buffer from: the caller's input, or data the trace captured.
struct LeafSource {
    int position = 0;
    int input = -1;
    std::shared_ptr<Buffer> captured;
};

// What a trace keeps of one signature: the graph's structure (node copies without inputs or
// data, so no buffer of the traced call stays alive), its leaves' sources and the executable
// (null when every output is an input or captured data).
struct Body {
    Device* device = nullptr;
    plan::GraphView graph;
    std::vector<LeafSource> leaves;
    std::shared_ptr<const plan::Executable> exec;
};

enum class ReplayMode { undecided, direct, recorded };

class Replayer {
  public:
    static constexpr size_t kOutputSets = 2;   // output sets kept (more are made per call)
    static constexpr size_t kRecordings = 4;   // recordings kept, the least recently used dropped
    static constexpr size_t kRecentCalls = 4;  // the address sets a call is looked up in
    static constexpr int kMeasuredRuns = 3;    // runs of each way while the mode is undecided

    explicit Replayer(const Body& body);
    std::vector<Tensor> call(const std::vector<Tensor>& inputs);
    size_t resident_bytes() const;
    size_t run_once() const { return body_.exec->launches.size() - per_call_.size(); }
    uint64_t recorded_calls() const { return recorded_calls_; }

  private:
    using Addresses = std::vector<uintptr_t>;
    struct Recorded {
        Addresses addresses;  // the inputs' and outputs' memory it was made over
        std::unique_ptr<Recording> recording;
        uint64_t last_use = 0;
    };

    // Output buffers no tensor holds: a kept set, a new kept one, or past kOutputSets a new set
    // for this call alone.
    std::vector<std::shared_ptr<Buffer>> take_outputs();
    // The caller's inputs and an output set bound into run_ for one call; unbound (the caller's
    // buffers and the outputs not held past the call) when it goes, however the call ends.
    class Binding {
      public:
        Binding(Replayer& r, const std::vector<Tensor>& inputs);
        ~Binding();
        Binding(const Binding&) = delete;
        Binding& operator=(const Binding&) = delete;

      private:
        Replayer& r_;
    };
    // The memory bound for this call: each input leaf's, then each computed output's.
    std::vector<const DeviceMemory*> bound_memory() const;
    Addresses bound_addresses() const;
    // The recording for the bound addresses: kept, moved to them, or made now (see above); null
    // where none can serve them.
    Recording* recording_for_bound();
    // Moves `r` to the bound addresses `a` in place; false where it cannot.
    bool rebind(Recorded& r, const Addresses& a);
    // Keeps `a` among the last kRecentCalls addresses without a recording.
    void remember_recent(Addresses a);
    void launch_direct();
    // One call, its launches direct or (ReplayMode::recorded) from the recording for its
    // buffers where there is one.
    std::vector<Tensor> run(const std::vector<Tensor>& inputs, ReplayMode mode);

    // Runs the launches whose values are the same every call, once (see above).
    void run_fixed_launches();

    const Body& body_;
    plan::ArenaPlan arena_;
    plan::RunBuffers run_;      // the arena's buffers; each call binds its inputs and outputs here
    std::vector<int> outputs_;  // the computed outputs' positions, each once
    std::vector<std::vector<std::shared_ptr<Buffer>>> output_sets_;  // per set, per outputs_
    size_t output_set_bytes_ = 0;
    std::vector<const plan::CompiledLaunch*> per_call_;  // the launches every call runs
    size_t fixed_bytes_ = 0;                             // the buffers of the launches run once
    std::vector<Recorded> recordings_;
    std::vector<Addresses> recent_;  // the last kRecentCalls calls' addresses without recordings
    // The buffers the launches use besides the bound ones (intermediates, captured data, scratch,
    // the fault record): a recording's use of them never moves.
    std::vector<uintptr_t> unbound_handles_;
    uint64_t clock_ = 0, recorded_calls_ = 0;
    ReplayMode mode_;
    // The first replay's best time, direct (to the device's finish), while the mode is
    // undecided.
    double direct_us_ = -1;
};

// A call of a body: its outputs, from the replayer (made on first use) or, without an
// executable, the inputs and captured data it returns.
std::vector<Tensor> replay(const Body& body, std::unique_ptr<Replayer>& replayer,
                           const std::vector<Tensor>& inputs);

}  // namespace kiln::program
