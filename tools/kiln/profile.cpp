// `kiln profile CASE`: resolves a built-in graph workload (workloads/cases.hpp) on one device and
// prints each launch (kernel, schedule point, device microseconds, whether it was raced and the
// race's table), the fusion decisions (each form tried with its estimate, each refusal with its
// reason) and the refusals behind the plan it ran, the host microseconds of a resolve on a miss and
// on a replay hit and of a call of the case compiled (kiln::compile), and whether the result is
// bit-identical to the graph oracle (and the compiled call's to the resolve's). --json prints one
// object; --trace writes a Chrome trace (chrome://tracing, Perfetto) of the miss's host phases and
// the launches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "case_timing.hpp"
#include "cli_common.hpp"
#include "json.hpp"
#include "output.hpp"
#include "plan/profile.hpp"
#include "table.hpp"
#include "workloads/cases.hpp"

namespace kiln::cli {
namespace {

struct ProfileOptions {
    std::string name, device, trace, shape, dtype = "f32";
    int64_t n = 0, rows = 0;  // 0: the case's default
    int hits = 20;
    bool json = false, tensor_cores = false;
};

using Clock = std::chrono::steady_clock;

graph::Shape parse_shape(const std::string& text) {
    graph::Shape s;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = text.find(',', at);
        const std::string part =
            text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        const auto v = parse_decimal(part, 1, std::numeric_limits<int64_t>::max());
        if (!v)
            fail("profile --shape {}: {}, separated by commas", text,
                 expected_decimal(part, 1, std::numeric_limits<int64_t>::max()));
        s.push_back(static_cast<int64_t>(*v));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return s;
}

void write_trace(const std::string& path, const plan::ResolveReport& miss,
                 const plan::Executable& e, const std::vector<double>& us) {
    std::vector<std::string> events;
    double t = 0;
    auto add = [&](const std::string& name, int tid, double start, double dur) {
        events.push_back(
            fmt::format("{{\"name\": {}, \"ph\": \"X\", \"pid\": 1, \"tid\": {}, \"ts\": {:.3f}, "
                        "\"dur\": {:.3f}}}",
                        json_quote(name), tid, start, dur));
    };
    for (const auto& [name, dur] : {std::pair{"plan", miss.plan_us},
                                    {"extract", miss.extract_us},
                                    {"compile", miss.compile_us},
                                    {"race", miss.race_us}}) {
        add(name, 1, t, dur);
        t += dur;
    }
    for (size_t i = 0; i < e.launches.size(); ++i) {
        add(e.launches[i].record.name + " " + e.launches[i].record.schedule, 2, t, us[i]);
        t += us[i];
    }
    write_output(path, fmt::format("{{\"traceEvents\": [{}],\n\"otherData\": {{\"host thread\": 1, "
                                   "\"device\": 2}}}}\n",
                                   fmt::join(events, ",\n")));
}

int run_profile(const ProfileOptions& opt) {
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    workloads::CaseOptions co{
        opt.n, opt.rows, opt.shape.empty() ? graph::Shape{} : parse_shape(opt.shape),
        parse_dtype(opt.dtype), opt.tensor_cores ? MatmulClass::tensor_core : MatmulClass::exact};
    const workloads::Case c = workloads::make_case(opt.name, d, co);
    if (!opt.json)
        std::fprintf(stderr, "profiling %s %s on %s ...\n", c.name.c_str(), c.shape.c_str(),
                     d.info().id.c_str());

    const CaseTiming t = time_case(d, c, opt.hits);
    const plan::ResolveReport& miss = t.miss;
    const auto& exec = t.exec;
    const bool identical = t.identical && t.compiled_identical;
    const double hit = t.hit_us;
    const std::vector<double>& us = t.launch_us;
    const double total = t.device_us();
    const std::string unchecked =
        c.exact
            ? fmt::format("not checked (the host oracle would run {:.3g} multiply-adds)", c.terms)
            : "not checked (the tensor-core class: within a bound of the oracle, not its bits)";
    if (!opt.trace.empty()) write_trace(opt.trace, miss, *exec, us);

    if (opt.json) {
        std::vector<std::string> launches;
        for (size_t i = 0; i < exec->launches.size(); ++i) {
            const auto& r = exec->launches[i].record;
            std::vector<std::string> race;
            for (const auto& [name, ms] : r.race)
                race.push_back(fmt::format("{{\"schedule\": {}, \"us\": {:.3f}}}", json_quote(name),
                                           ms * 1e3));
            launches.push_back(fmt::format(
                "{{\"name\": {}, \"schedule\": {}, \"us\": {:.3f}, \"raced\": {}, \"model\": {}, "
                "\"estimate_us\": {:.3f}, \"race\": [{}]{}}}",
                json_quote(r.name), json_quote(r.schedule), us[i], r.raced ? "true" : "false",
                json_quote(r.winner_by_model), r.estimate_us, fmt::join(race, ", "),
                r.raced ? "" : fmt::format(", \"not_raced\": {}", json_quote(r.not_raced))));
        }
        std::vector<std::string> decisions, refusals;
        for (const std::string& line : exec->fusion_decisions)
            decisions.push_back(json_quote(line));
        for (const std::string& r : exec->fusion_refusals) refusals.push_back(json_quote(r));
        fmt::print(
            "{{\"case\": {}, \"shape\": {}, \"device\": {}, \"launches\": [{}], "
            "\"fusion\": [{}], \"fusion_refusals\": [{}], \"device_us\": "
            "{:.3f}, "
            "\"bytes\": {:.0f}, \"host_us\": {{\"miss\": {:.1f}, \"hit\": {:.2f}, "
            "\"compiled_call\": {:.2f}}}, \"compiled_identical\": {}, \"bit_identical\": {}}}\n",
            json_quote(c.name), json_quote(c.shape), json_quote(d.info().id),
            fmt::join(launches, ", "), fmt::join(decisions, ", "), fmt::join(refusals, ", "), total,
            c.bytes, miss.total_us, hit, t.compiled_us, t.compiled_identical ? "true" : "false",
            !t.checked  ? "null"
            : identical ? "true"
                        : "false");
        return identical ? 0 : 1;
    }
    fmt::print("case {} {}  device {}\n", c.name, c.shape, d.info().id);
    Table table({"launch", "kernel", "schedule", "us", "GB/s", "raced", "model's pick"});
    for (size_t i = 0; i < exec->launches.size(); ++i) {
        const auto& r = exec->launches[i].record;
        table.add({std::to_string(i), r.name, r.schedule, fmt::format("{:.2f}", us[i]),
                   exec->launches.size() == 1 && us[i] > 0
                       ? fmt::format("{:.1f}", c.bytes / us[i] / 1e3)
                       : "",
                   r.raced ? "yes" : "no: " + r.not_raced, r.winner_by_model});
    }
    table.print();
    for (size_t i = 0; i < exec->launches.size(); ++i) {
        const auto& r = exec->launches[i].record;
        if (r.race.empty()) continue;
        std::vector<std::string> parts;
        for (const auto& [name, ms] : r.race)
            parts.push_back(fmt::format("{} {:.2f} us", name, ms * 1e3));
        fmt::print("race of launch {}: {}\n", i, fmt::join(parts, ", "));
    }
    for (const std::string& line : exec->fusion_decisions) fmt::print("fusion: {}\n", line);
    for (const std::string& r : exec->fusion_refusals) fmt::print("not fused: {}\n", r);
    fmt::print(
        "device {:.2f} us in {} launches; host per resolve: miss {:.0f} us, replay hit {:.2f} us; "
        "per compiled call (kiln::compile) {:.2f} us\n",
        total, exec->launches.size(), miss.total_us, hit, t.compiled_us);
    if (!t.compiled_identical) fmt::print("compiled call bit-identical to the resolve: NO\n");
    fmt::print("bit-identical to the oracle: {}\n", !t.checked  ? unchecked
                                                    : identical ? "yes"
                                                                : "NO");
    return identical ? 0 : 1;
}

}  // namespace

Command add_profile_command(CLI::App& parent) {
    auto opt = std::make_shared<ProfileOptions>();
    auto* p = parent.add_subcommand("profile", "Profile a built-in graph workload on one device");
    p->add_option(
         "case", opt->name,
         "add_square, mul_rank4, softmax, layer_norm, rms_norm, gelu_mlp_epilogue, matmul, mlp, "
         "q8_linear, conv1d, attention")
        ->required()
        ->check(CLI::IsMember(workloads::case_names()));
    p->add_option("--device", opt->device, "device id, index or backend (default: the best)");
    add_number_option(p, "--n", opt->n,
                      "elements (add_square) or row length (default: the case's)");
    add_number_option(p, "--rows", opt->rows, "rows (default: the case's)");
    p->add_option("--shape", opt->shape,
                  "mul_rank4's shape (9,11,32,16), conv1d's batch,in_channels,length,"
                  "out_channels,kernel, attention's batch,heads,seq,head_dim");
    p->add_option("--dtype", opt->dtype, "the inputs' dtype: f32 (default), f16 or bf16");
    p->add_flag("--tensor-cores", opt->tensor_cores,
                "matmul, mlp, q8_linear, conv1d and attention in the tensor-core class (f16/bf16; "
                "on tensor cores the "
                "results lie within the class's bound of the oracle)");
    add_number_option(p, "--hits", opt->hits, "replay hits to time (median)", 1, 100000);
    p->add_flag("--json", opt->json, "print one JSON object");
    p->add_option("--trace", opt->trace, "write a Chrome trace of the resolve to this file");
    return {p, [opt] { return run_profile(*opt); }};
}

}  // namespace kiln::cli
