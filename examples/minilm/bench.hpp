// Throughput and overheads of Model::embed on one device: sentences per second at a batch size
// and sequence length (synthetic ids, no padding), kernels launched per forward, and host
// microseconds per forward on replay hits: inside the resolves (their plan lookups, and their
// whole time, which includes the kernels' run where launches are synchronous, as on the CPU
// backend) and outside them (building the graph, waiting for the device, reading back).
#pragma once

#include <string>

#include "model.hpp"

namespace minilm {

struct BenchResult {
    Model::Form form = Model::Form::compiled;
    int batch = 0, seq = 0, reps = 0;
    double first_forward_ms = 0;     // the miss: plan, race, compile, run
    double forward_ms = 0;           // median over reps, embeddings on the host
    double sentences_per_s = 0;      // batch / forward_ms
    int resolves = 0, launches = 0;  // per forward (resolve form: one per layer, and two more)
    // Host microseconds per forward, medians over replay hits: outside the resolves (or the
    // program's call), in their plan lookups, in the resolves (or the call) in all.
    double outside_us = 0, plan_us = 0, resolve_us = 0;
    // Compiled form: device bytes the program keeps between calls for its intermediates and
    // outputs (all signatures traced so far; the weights not counted).
    size_t resident_bytes = 0;
};

BenchResult bench_embed(const Model& model, Model::Form form, int batch, int seq, int reps);
const char* name(Model::Form form);

// The results as one JSON object (device, model directory, results).
std::string bench_json(const Model& model, const std::string& dir,
                       const std::vector<BenchResult>& results);

}  // namespace minilm
