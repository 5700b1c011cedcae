// The workloads `kiln bench` runs: each times kiln on one device (device-side medians, compile and
// tuning measured apart), checks its result against the oracle where that is affordable, and times
// the outside CPU peers that exist for it (OpenMP loops, OpenBLAS, Halide) when the device is the
// host CPU.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/device.hpp"

namespace kiln::cli {

struct BenchSettings {
    bool quick = false;  // tiny shapes that still fill and overflow every block (tests)
    int iters = 25;      // timed dispatches per figure (median)
    int hits = 20;       // host calls timed on a replay or tuner hit (median)
    std::string halide;  // the Halide peers' library (bench/peers_halide.py); empty: none
};

struct PeerTime {
    std::string name;
    double us = 0;
};

struct BenchResult {
    std::string name, shape;
    double kiln_us = 0;    // device-side median of one launch (or of a graph's launches)
    double setup_ms = 0;   // compile, race and tuning on first use, excluded from kiln_us
    std::string setup;     // what setup_ms covers ("tuned 10 variants", "tuner hit", ...)
    double host_us = 0;    // host time of one call on a replay or tuner hit (median)
    std::string schedule;  // the schedule point(s) that ran
    std::optional<bool> bit_identical;  // against the oracle; empty where not checked
    double bytes = 0;                   // bytes one call must move at least
    double flops = 0;                   // f32 operations of one call (0: a memory-bound workload)
    bool compute_bound = false;  // rated against the device's f32 rate, else its copy bandwidth
    std::vector<PeerTime> peers;
};

// What the outside GPU peers script needs to time a workload at the shape kiln ran it.
struct PeerSpec {
    std::string kind;           // "matmul", "softmax", ...
    std::vector<int64_t> dims;  // the kind's sizes, as bench/peers_torch.py reads them
};

struct Workload {
    std::string name;
    std::function<PeerSpec(const Device&, const BenchSettings&)> spec;
    std::function<BenchResult(Device&, const BenchSettings&)> run;
};

// Every workload, in the order of the table.
const std::vector<Workload>& bench_workloads();

// Whether the host CPU's peers apply to `device` (it is not a GPU).
bool runs_on_host_cpu(const Device& device);

}  // namespace kiln::cli
