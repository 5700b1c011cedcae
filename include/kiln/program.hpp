// kiln::Program: a function of tensors traced once per signature and then replayed at the cost
// of its kernels (docs/programs.md).
//
//   kiln::Program forward = kiln::compile([&](const std::vector<Tensor>& in) {
//       Tensor h = kiln::gelu(kiln::linear(in[0], w1, &b1));
//       h.resolve();  // inside a trace: a no-op, the whole function is planned at once
//       return std::vector<Tensor>{kiln::linear(h, w2, &b2)};
//   });
//   std::vector<Tensor> y = forward({x});  // the first call with x's signature traces and plans
//   y = forward({x2});                      // the same signature: binds x2 and runs the kernels
//
// The signature is each input's device, dtype and shape, and the planner's options. The first
// call with a signature runs the function on its inputs with every resolve inside it deferred,
// plans everything the outputs need as one graph (fusion across what would be separate
// resolves), runs it, and keeps the executable: later calls with that signature bind their
// inputs' buffers and launch the kernels, with no graph built, hashed or looked up. The function
// runs only when tracing, so its Python-level or C++ control flow is fixed at the trace; tensors
// it captures (weights) or creates (constants, seeded generators) are part of the program as they
// were at the trace. Reading a tensor's data inside the function is a kiln::Error (it has none
// yet). Each call's outputs are values: an earlier call's never change. A replay runs in buffers
// the signature keeps between calls (intermediates sharing memory by liveness, outputs in a few
// sets that serve again once no tensor holds them), its launches issued directly or, on CUDA
// where that measures faster, replayed as one CUDA graph (one per set of input and output
// addresses that recurs). A dimension declared to vary
// (ProgramOptions::buckets) is padded to the next of a few sizes, so its sizes share their
// bucket's signature. At most `kMaxSignatures`
// signatures are kept; the least recently used is dropped past that. A program is not safe to call
// from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

using ProgramFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// A dimension that varies between calls (a batch's sequence length), declared so that its sizes
// share a few signatures: input `input`'s axis `axis` (negative: from the last) is padded with
// zeros at its end to the smallest of `sizes` that holds it. The function must give the answer
// asked for with that padding present (the real extent passed as data: a mask, lengths); the
// outputs are the padded call's. A size past the largest is a kiln::Error naming the input.
struct Bucket {
    size_t input = 0;
    int64_t axis = 0;
    std::vector<int64_t> sizes;  // ascending, positive
};

struct ProgramOptions {
    std::vector<Bucket> buckets;  // at most one per input axis
};

class Program {
  public:
    static constexpr size_t kMaxSignatures = 8;

    explicit Program(ProgramFunction fn, ProgramOptions options = {});
    ~Program();
    Program(Program&&) noexcept;
    Program& operator=(Program&&) noexcept;

    std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

    struct Stats {
        uint64_t traces = 0;   // calls that traced and planned
        uint64_t replays = 0;  // calls that bound and launched
        size_t signatures = 0;
        size_t launches = 0;  // kernels a replay of the last signature called launches
        // Device memory the kept signatures hold between calls for their intermediates and
        // outputs (slots shared by liveness), staging copies of inputs not counted.
        size_t resident_bytes = 0;
        uint64_t padded = 0;  // calls whose inputs were padded to a bucket
        // Launches that read captured data alone (a weight's transposed copy): run once when a
        // signature's first replay sets up its buffers, not by its calls (all signatures).
        size_t run_once = 0;
        // Replays that ran a recording (one CUDA graph launch) rather than their launches one by
        // one (all signatures).
        uint64_t recorded = 0;
    };
    Stats stats() const;

    // Writes every signature the program keeps to one file at `path` (replaced whole, never
    // half written): each signature's graph with the data it captured (weights), and the plan it
    // runs on the device it ran on with its kernels' binaries. `annotation` is kept as it is.
    // kiln::Error before the first call (nothing is traced yet). A program file holds compiled
    // code: load only files you trust, as you would run a program.
    void save(const std::string& path, const std::string& annotation = {}) const;
    // A program saved by save(): its calls run the saved signatures (the inputs' dtypes and
    // shapes must be one of theirs; buckets as saved). On a device of the model and toolchain a
    // signature ran on, with the same planner options, its first call there builds the saved
    // plan with the saved binaries: no planning, racing or compiling; on any other device it is
    // planned there from the saved graph. A file that is truncated, edited, not a program file
    // or of another format is a kiln::Error; one saved by another kiln build is planned again.
    static Program load(const std::string& path);
    // The annotation given to save() of the file it was loaded from ("" otherwise).
    const std::string& annotation() const;

  private:
    Program();
    struct State;
    std::unique_ptr<State> state_;
};

inline Program compile(ProgramFunction fn, ProgramOptions options = {}) {
    return Program(std::move(fn), std::move(options));
}

// Whether the calling thread is tracing a Program's function (resolves are deferred, data
// cannot be read).
bool tracing();

}  // namespace kiln
