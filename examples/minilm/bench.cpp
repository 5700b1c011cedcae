// Timing Model::embed (bench.hpp).
#include "bench.hpp"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "kiln/error.hpp"
#include "plan/profile.hpp"

namespace minilm {
namespace {

using Clock = std::chrono::steady_clock;

double us_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// `batch` sequences of `seq` ids: [CLS], spread ids of ordinary word pieces, [SEP].
std::vector<std::vector<int32_t>> synthetic_batch(int64_t vocab, int batch, int seq) {
    constexpr int32_t kCls = 101, kSep = 102, kFirstWord = 1996;
    std::vector<std::vector<int32_t>> out(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) {
        auto& ids = out[static_cast<size_t>(i)];
        ids.push_back(kCls);
        for (int j = 1; j + 1 < seq; ++j)
            ids.push_back(kFirstWord +
                          static_cast<int32_t>((int64_t(i) * 7919 + int64_t(j) * 104729) %
                                               (vocab - kFirstWord)));
        ids.push_back(kSep);
    }
    return out;
}

}  // namespace

const char* name(Model::Form form) {
    return form == Model::Form::compiled ? "compiled" : "resolves";
}

BenchResult bench_embed(const Model& model, Model::Form form, int batch, int seq, int reps) {
    if (batch < 1 || seq < 2 || seq > model.config().max_positions || reps < 1)
        kiln::fail(
            "minilm bench: batch {}, sequence {}, reps {}; expected batch >= 1, sequence 2 "
            "to {}, reps >= 1",
            batch, seq, model.config().max_positions, reps);
    const auto ids = synthetic_batch(model.config().vocab, batch, seq);
    BenchResult r{.form = form, .batch = batch, .seq = seq, .reps = reps};
    std::vector<double> forward, outside, plan, resolve;
    for (int rep = 0; rep <= reps; ++rep) {
        model.device().synchronize();
        const auto t0 = Clock::now();
        Model::Report report;
        kiln::Tensor e = model.embed(ids, &report, form);
        const std::vector<float> host = e.to_host<float>();
        const auto t1 = Clock::now();
        if (rep == 0) {
            r.first_forward_ms = us_between(t0, t1) / 1e3;
            continue;
        }
        if (!report.all_hits)
            kiln::fail("minilm bench: forward {} ({}) missed the replay cache", rep, name(form));
        r.launches = report.launches;
        r.resolves = report.resolves;
        forward.push_back(us_between(t0, t1) / 1e3);
        outside.push_back(us_between(t0, t1) - report.total_us);
        plan.push_back(report.plan_us);
        resolve.push_back(report.total_us);
    }
    r.forward_ms = median(forward);
    r.sentences_per_s = batch / (r.forward_ms / 1e3);
    r.outside_us = median(outside);
    r.plan_us = median(plan);
    r.resolve_us = median(resolve);
    if (form == Model::Form::compiled) r.resident_bytes = model.program_stats().resident_bytes;
    return r;
}

std::string bench_json(const Model& model, const std::string& dir,
                       const std::vector<BenchResult>& results) {
    nlohmann::json out;
    out["device"] = model.device().info().id;
    out["model"] = dir;
    out["results"] = nlohmann::json::array();
    for (const auto& r : results)
        out["results"].push_back({
            {"form", name(r.form)},
            {"batch", r.batch},
            {"seq", r.seq},
            {"reps", r.reps},
            {"sentences_per_s", r.sentences_per_s},
            {"forward_ms_median", r.forward_ms},
            {"first_forward_ms", r.first_forward_ms},
            {"resolves_per_forward", r.resolves},
            {"launches_per_forward", r.launches},
            {"host_us_per_forward_hit",
             {{"outside_resolves", r.outside_us},
              {"resolve_plan", r.plan_us},
              {"resolve", r.resolve_us}}},
            {"program_resident_bytes", r.resident_bytes},
        });
    return out.dump(2);
}

}  // namespace minilm
