// The table and JSON forms of a `kiln bench` run, and the figures derived from each result.
#include "bench_results.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "json.hpp"
#include "table.hpp"

namespace kiln::cli {

const PeerTime* best_peer(const BenchResult& r) {
    const PeerTime* best = nullptr;
    for (const auto& p : r.peers)
        if (p.us > 0 && (!best || p.us < best->us)) best = &p;
    return best;
}

double kiln_over_best_peer(const BenchResult& r) {
    const PeerTime* best = best_peer(r);
    return best ? r.kiln_us / best->us : 0;
}

double rate_fraction(const BenchResult& r, const DeviceRun& d) {
    if (r.kiln_us <= 0) return 0;
    if (r.compute_bound) return d.gflops > 0 ? r.flops / r.kiln_us / 1e3 / d.gflops : 0;
    return d.bandwidth_gbs > 0 ? r.bytes / r.kiln_us / 1e3 / d.bandwidth_gbs : 0;
}

std::string rate_text(const BenchResult& r) {
    if (r.kiln_us <= 0) return "-";
    return r.compute_bound ? fmt::format("{:.1f} GFLOP/s", r.flops / r.kiln_us / 1e3)
                           : fmt::format("{:.1f} GB/s", r.bytes / r.kiln_us / 1e3);
}

namespace {

std::string us_text(double us) {
    return us >= 1000 ? fmt::format("{:.2f} ms", us / 1e3) : fmt::format("{:.2f} us", us);
}

std::string identical_text(const BenchResult& r) {
    return !r.bit_identical ? "not checked" : *r.bit_identical ? "yes" : "NO";
}

std::string json_number(double v) {
    return fmt::format("{:.6g}", v);
}

}  // namespace

void print_bench_table(const DeviceRun& d) {
    fmt::print("device {}  (copy {:.1f} GB/s, f32 {:.1f} GFLOP/s)\n", d.id, d.bandwidth_gbs,
               d.gflops);
    Table table({"case", "shape", "kiln", "rate", "of peak", "best peer", "kiln/peer", "setup",
                 "host/call", "bits"});
    for (const auto& r : d.results) {
        const PeerTime* best = best_peer(r);
        table.add(
            {r.name, r.shape, us_text(r.kiln_us), rate_text(r),
             fmt::format("{:.0f}% {}", 100 * rate_fraction(r, d), r.compute_bound ? "f32" : "copy"),
             best ? fmt::format("{} {}", best->name, us_text(best->us)) : "-",
             best ? fmt::format("{:.3g}x", kiln_over_best_peer(r)) : "-",
             fmt::format("{:.0f} ms", r.setup_ms), us_text(r.host_us), identical_text(r)});
    }
    table.print();
}

std::string bench_json(const BenchRun& run) {
    std::vector<std::string> devices;
    for (const auto& d : run.devices) {
        std::vector<std::string> cases;
        for (const auto& r : d.results) {
            std::vector<std::string> peers;
            for (const auto& p : r.peers)
                peers.push_back(fmt::format("{{\"name\": {}, \"us\": {}}}", json_quote(p.name),
                                            json_number(p.us)));
            const PeerTime* best = best_peer(r);
            cases.push_back(fmt::format(
                "{{\"case\": {}, \"shape\": {}, \"kiln_us\": {}, \"setup_ms\": {}, \"setup\": {}, "
                "\"host_us\": {}, \"schedule\": {}, \"bit_identical\": {}, \"bytes\": {}, "
                "\"flops\": {}, \"peers\": [{}], \"best_peer\": {}, \"kiln_over_best_peer\": {}, "
                "\"fraction\": {}, \"fraction_of\": {}}}",
                json_quote(r.name), json_quote(r.shape), json_number(r.kiln_us),
                json_number(r.setup_ms), json_quote(r.setup), json_number(r.host_us),
                json_quote(r.schedule),
                !r.bit_identical   ? "null"
                : *r.bit_identical ? "true"
                                   : "false",
                json_number(r.bytes), json_number(r.flops), fmt::join(peers, ", "),
                best ? json_quote(best->name) : "null",
                best ? json_number(kiln_over_best_peer(r)) : "null",
                json_number(rate_fraction(r, d)),
                json_quote(r.compute_bound ? "f32 rate" : "copy bandwidth")));
        }
        devices.push_back(fmt::format(
            "{{\"device\": {}, \"copy_gbs\": {}, \"f32_gflops\": {}, \"cases\": [\n    {}]}}",
            json_quote(d.id), json_number(d.bandwidth_gbs), json_number(d.gflops),
            fmt::join(cases, ",\n    ")));
    }
    return fmt::format("{{\"kiln_commit\": {}, \"date\": {}, \"devices\": [\n  {}]}}\n",
                       json_quote(run.commit), json_quote(run.date), fmt::join(devices, ",\n  "));
}

}  // namespace kiln::cli
