// KindCost: the terms a launch kind adds to the cost model (roofline.hpp states the model), and
// the model's device constants that those terms share with roofline.cpp. A kind leaves a hook
// null where the model's default holds.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/device_facts.hpp"
#include "plan/graph_view.hpp"
#include "plan/plan.hpp"

namespace kiln::plan::cost {

constexpr double kLatencyUs = 1.0;      // SIMT memory latency the loads in flight must cover
constexpr int kResidentThreads = 2048;  // per SIMT unit
// Threads a SIMT unit needs to keep its tensor cores busy: 8 warps, each with a warp tile of
// independent mma steps (SIMT arithmetic needs half of kResidentThreads).
constexpr int kTensorCoreThreads = 256;
constexpr double kUncoalesced = 0.25;  // bandwidth share of loads spread over 32 lines
constexpr double kBarrierUs = 0.1;     // one barrier of a SIMT block
// Threads of a CPU block sharing a row: each pass over the row pays this per element (their
// strided walks; notes/cpu-rows-grids-padding-2026-12-07.md), and a row the threads keep
// (Schedule::cache) this per lane for folding the lanes' values.
constexpr double kCpuSharedRowElementUs = 0.002;
constexpr double kCpuKeptRowLaneUs = 0.003;
constexpr double kCpuBlockUs = 0.05;  // dispatching one block on a CPU core
constexpr int kMapBlock = 256;        // the threads of a flat map launch's block
// A flat map's element read through an index map on a CPU core: the division of its index by
// the extents and a gather (notes/cpu-map-rows-2026-12-07.md); a row-loop map's row start.
constexpr double kCpuIndexedElementUs = 0.004;
constexpr double kCpuRowStartUs = 0.002;
constexpr int64_t kRowCacheBytes = 32 * 1024;
// What a later pass over a row still in the cache costs, as a share of a pass from memory.
constexpr double kCachedPassShare = 0.25;

// How many passes a launch makes over what it reads, and how many times its maps' flops run.
struct Passes {
    double reads = 1;
    double flops = 1;
};

// A contraction kind's terms: node is the launch's contraction.
struct ContractionCost {
    // Its terms' flops.
    double (*flops)(const GraphView& g, int node);
    // Its terms' flops at point s, outputs its last tiles compute past the edges included;
    // null: flops.
    double (*padded_flops)(const GraphView& g, int node, const Schedule& s);
    // The share of the device's rate its terms run at, at point s.
    double (*rate_share)(const Schedule& s, const DeviceFacts& f);
    // How many times the launch reads each element of its operands (in operand order).
    std::vector<double> (*operand_reads)(const GraphView& g, int node, const Schedule& s);
    // SIMT: what a block waits for its k-steps' tiles, over the grid; null: 0.
    double (*simt_steps_us)(const GraphView& g, int node, const Schedule& s, int64_t grid,
                            const DeviceFacts& f);
};

struct KindCost {
    // null: one pass.
    Passes (*passes)(const Launch& l, const GraphView& g, const Schedule& s) = nullptr;
    // A fold with lane partials reads the segment values a segments launch wrote, not its input.
    bool folds_partials = false;
    // SIMT: bytes a thread has in flight (null: 4, one element), threads a unit needs for its
    // full rate (null: half the resident threads), the share of the bandwidth its loads' layout
    // allows (null: 1), and time beyond the roofline (barriers; null: 0).
    double (*simt_bytes_in_flight)(const Launch& l, const Schedule& s) = nullptr;
    double (*simt_threads_needed)(const Schedule& s) = nullptr;
    double (*simt_bandwidth_share)(const Launch& l, const Schedule& s) = nullptr;
    double (*simt_extra_us)(const Launch& l, const Schedule& s, const DeviceFacts& f) = nullptr;
    // CPU: time beyond the roofline (a looped block's tree steps, a map's index arithmetic;
    // null: 0). indexed_reads: some element is read through an index map (a permute, broadcast,
    // slice or pad view, a concat or a gather).
    double (*cpu_extra_us)(const Launch& l, const GraphView& g, const Schedule& s,
                           const DeviceFacts& f, bool indexed_reads) = nullptr;
    // Contraction kinds only.
    const ContractionCost* contraction = nullptr;
};

// The contraction kinds' terms (contraction_cost.cpp): matmul's also gives its kind's SIMT
// bytes in flight and threads needed.
extern const ContractionCost kMatmulCost, kConv1dCost, kAttentionCost;
double matmul_simt_bytes_in_flight(const Launch& l, const Schedule& s);
double matmul_simt_threads_needed(const Schedule& s);

}  // namespace kiln::plan::cost
