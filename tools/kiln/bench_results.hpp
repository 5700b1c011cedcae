// The results of a `kiln bench` run and their three forms: the plain-text table (stdout), the
// JSON (--json) and the self-contained HTML report (--report, bench_report.cpp).
#pragma once

#include <string>
#include <vector>

#include "bench_workloads.hpp"

namespace kiln::cli {

struct DeviceRun {
    std::string id;
    double bandwidth_gbs = 0;  // the device's copy bandwidth (plan::device_facts)
    double gflops = 0;         // the device's f32 arithmetic rate (plan::device_facts)
    std::vector<BenchResult> results;
};

struct BenchRun {
    std::string commit;  // git describe at configure time, or "unknown"
    std::string date;    // UTC, ISO 8601
    std::vector<DeviceRun> devices;
};

// The fastest peer, or null where the workload has none.
const PeerTime* best_peer(const BenchResult& r);
// kiln's time over the best peer's (below 1: kiln is faster); 0 without a peer.
double kiln_over_best_peer(const BenchResult& r);
// The fraction of the device's f32 rate (compute-bound workloads) or of its copy bandwidth
// (the rest) kiln's time reaches.
double rate_fraction(const BenchResult& r, const DeviceRun& d);
// "GB/s" or "GFLOP/s" and kiln's figure in it.
std::string rate_text(const BenchResult& r);

void print_bench_table(const DeviceRun& d);
std::string bench_json(const BenchRun& run);
std::string bench_html(const BenchRun& run);  // bench_report.cpp

}  // namespace kiln::cli
