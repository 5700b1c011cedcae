// program_replay: one signature of a compiled program (kiln/program.hpp) and how its later calls
// run. Its buffers are kept between calls: intermediates in slots shared by liveness
// (plan/arena.hpp), captured data bound once. A call runs one of two ways, the faster of them
// measured at the first two replays on devices that record graphs (CUDA), direct elsewhere:
//   direct     the caller's inputs and fresh output buffers bound in place, the launches issued
//              one by one (no copies);
//   recorded   the inputs copied into staging buffers, the launches replayed as one recording
//              (a CUDA graph), each output copied out into a fresh buffer.
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
    explicit Replayer(const Body& body);
    std::vector<Tensor> call(const std::vector<Tensor>& inputs);
    size_t resident_bytes() const { return arena_.bytes() + fixed_bytes_; }
    size_t run_once() const { return body_.exec->launches.size() - per_call_.size(); }

  private:
    std::vector<Tensor> direct(const std::vector<Tensor>& inputs);
    std::vector<Tensor> recorded(const std::vector<Tensor>& inputs);
    void prepare_recording();

    // Runs the launches whose values are the same every call, once (see above).
    void run_fixed_launches();

    const Body& body_;
    plan::ArenaPlan arena_;
    plan::RunBuffers run_;     // the arena's buffers; direct calls bind inputs and outputs here
    plan::RunBuffers staged_;  // the recording's: inputs bound to staging buffers
    std::unique_ptr<Recording> recording_;
    std::vector<int> outputs_;  // the computed outputs' positions, each once
    std::vector<std::shared_ptr<Buffer>> output_slots_;  // their arena buffers
    std::vector<const plan::CompiledLaunch*> per_call_;  // the launches every call runs
    size_t fixed_bytes_ = 0;                             // the buffers of the launches run once
    ReplayMode mode_;
    // The first replay's time, direct (to the device's finish), while the mode is undecided.
    double direct_us_ = -1;
};

// A call of a body: its outputs, from the replayer (made on first use) or, without an
// executable, the inputs and captured data it returns.
std::vector<Tensor> replay(const Body& body, std::unique_ptr<Replayer>& replayer,
                           const std::vector<Tensor>& inputs);

}  // namespace kiln::program
