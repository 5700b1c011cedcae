// Timing one built-in graph case: the miss against the oracle, replay hits, compiled calls,
// device time.
#include "case_timing.hpp"

#include <algorithm>
#include <chrono>

#include "bench_common.hpp"
#include "graph/oracle.hpp"
#include "kiln/program.hpp"
#include "plan/graph_view.hpp"
#include "plan/resolve.hpp"

namespace kiln::cli {
namespace {

std::vector<graph::NodeRef> nodes_of(const std::vector<Tensor>& ts) {
    std::vector<graph::NodeRef> out;
    for (const auto& t : ts) out.push_back(t.node());
    return out;
}

}  // namespace

double CaseTiming::device_us() const {
    double total = 0;
    for (double u : launch_us) total += u;
    return total;
}

namespace {}  // namespace

CaseTiming time_case(Device& d, const workloads::Case& c, int hits) {
    CaseTiming t;
    // The miss: plan, race, compile, run. The oracle reads the inputs first, unless its
    // contractions are too long to run on the host in a few seconds.
    std::vector<Tensor> first = c.build(c.inputs);
    t.checked = c.exact && c.terms <= kOracleTerms;
    const auto want =
        t.checked ? graph::evaluate(nodes_of(first)) : std::vector<graph::HostTensor>{};
    resolve(first);
    t.miss = plan::last_report();
    t.exec = plan::last_executable();
    t.identical = true;
    for (size_t i = 0; i < want.size(); ++i)
        t.identical = t.identical && first[i].to_host_bytes() == want[i].bytes();

    // Hits: the same graph built again, resolved from the replay cache.
    std::vector<double> hit_us;
    for (int i = 0; i < hits; ++i) {
        std::vector<Tensor> again = c.build(c.inputs);
        d.synchronize();
        resolve(again);
        hit_us.push_back(plan::last_report().total_us);
        d.synchronize();
    }
    t.hit_us = bench::median(hit_us);

    // The compiled form: traced once (its plan is the resolve's), then calls that bind and launch.
    Program program = compile(c.build);
    std::vector<Tensor> compiled = program(c.inputs);
    t.compiled_identical = true;
    for (size_t i = 0; i < compiled.size(); ++i)
        t.compiled_identical =
            t.compiled_identical && compiled[i].to_host_bytes() == first[i].to_host_bytes();
    std::vector<double> call_us;
    for (int i = 0; i < hits; ++i) {
        d.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        compiled = program(c.inputs);
        call_us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
        d.synchronize();
    }
    t.compiled_us = bench::median(call_us);

    // Device time of each launch.
    std::vector<Tensor> timed = c.build(c.inputs);
    t.launch_us = plan::time_launches(*t.exec, plan::view_graph(nodes_of(timed)));
    return t;
}

}  // namespace kiln::cli
