// `kiln tune rms_norm|matvec_q8`: tunes one shipped op for one shape on one device with random
// inputs, showing progress, then a table of the variants' medians with the winner marked (or,
// with --json, one object). A cached decision is reported as a hit, with nothing benched.
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "cli_common.hpp"
#include "json.hpp"
#include "kiln/semantics.hpp"
#include "ops/matvec_q8.hpp"
#include "ops/rms_norm.hpp"
#include "oracle/matvec_q8.hpp"
#include "table.hpp"

namespace kiln::cli {
namespace {

struct TuneOptions {
    int64_t rows = 1, n = 4096, k = 4096;
    std::string dtype = "f32";
    std::string device;
    bool json = false;
};

std::vector<float> random_values(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist;
    std::vector<float> v(count);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Uploads f32 values into a buffer of `dtype` (f16/bf16 rounded to nearest even).
Buffer upload_as(Device& d, DType dtype, const std::vector<float>& values) {
    Buffer b(d, dtype, values.size());
    if (dtype == DType::f32) {
        b.upload(values);
        return b;
    }
    std::vector<uint8_t> bytes(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == DType::f16 ? semantics::f32_to_f16(values[i])
                                               : semantics::f32_to_bf16(values[i]);
        std::memcpy(&bytes[2 * i], &h, 2);
    }
    b.upload_bytes(bytes);
    return b;
}

int report(Tuned<Buffer>& tuned, const TuneOptions& opt) {
    if (!opt.json)
        tuned.on_benched([](const std::string& name, double ms) {
            std::fprintf(stderr, "  benched %-16s %10.4f ms\n", name.c_str(), ms);
        });
    if (!opt.json) std::fprintf(stderr, "tuning %s ...\n", tuned.full_key().c_str());
    tuned.run(Tuner::process_default());
    const TuneReport& r = tuned.report();
    if (opt.json) {
        std::string variants;
        for (size_t i = 0; i < r.variant_ms.size(); ++i)
            variants += fmt::format("{}{{\"name\": {}, \"ms\": {:.6g}}}", i ? ", " : "",
                                    json_quote(r.variant_ms[i].first), r.variant_ms[i].second);
        fmt::print(
            "{{\"op\": {}, \"key\": {}, \"device\": {}, \"winner\": {}, \"benched\": {}, "
            "\"hit\": {}, \"cache_file\": {}, \"variants\": [{}]}}\n",
            json_quote(r.op), json_quote(r.key), json_quote(r.device_id), json_quote(r.winner),
            r.benched, r.hit ? "true" : "false", json_quote(r.cache_file.string()), variants);
        return 0;
    }
    fmt::print("op {}  key {}\ndevice {}\ncache {}\n", r.op, r.key, r.device_id,
               r.cache_file.string());
    if (r.hit) {
        fmt::print("cached winner: {} (a hit: nothing benched, the winner ran once)\n", r.winner);
        return 0;
    }
    Table table({"variant", "median ms", ""});
    for (const auto& [name, ms] : r.variant_ms)
        table.add({name, fmt::format("{:.4f}", ms), name == r.winner ? "<- winner" : ""});
    table.print();
    fmt::print("{} variants benched{}\n", r.benched,
               r.retuned ? " (re-tuned: the cached winner is gone)" : "");
    return 0;
}

int tune_rms_norm(const TuneOptions& opt) {
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    const DType dtype = parse_dtype(opt.dtype);
    if (opt.rows < 1 || opt.n < 1)
        fail("tune rms_norm: --rows {} --n {}; both must be >= 1", opt.rows, opt.n);
    Buffer x = upload_as(d, dtype, random_values(static_cast<size_t>(opt.rows * opt.n), 1));
    Buffer w = upload_as(d, dtype, random_values(static_cast<size_t>(opt.n), 2));
    auto tuned = ops::rms_norm_tuned(d, x, w, opt.n, 1e-6f);
    return report(tuned, opt);
}

int tune_matvec(const TuneOptions& opt) {
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    if (opt.rows < 1 || opt.k < 64 || opt.k % 64 != 0)
        fail("tune matvec_q8: --rows {} --k {}; rows must be >= 1 and k a positive multiple of 64",
             opt.rows, opt.k);
    const auto wq = oracle::quantize_q8_0(random_values(static_cast<size_t>(opt.rows * opt.k), 3));
    const auto xq = oracle::quantize_q8_0(random_values(static_cast<size_t>(opt.k), 4));
    Buffer w(d, DType::u8, wq.size()), x(d, DType::u8, xq.size());
    w.upload(wq);
    x.upload(xq);
    auto tuned = ops::matvec_q8_tuned(d, w, x, opt.rows, opt.k);
    return report(tuned, opt);
}

}  // namespace

Command add_tune_command(CLI::App& parent) {
    auto* tune = parent.add_subcommand("tune", "Tune a shipped op for one shape on one device");
    tune->require_subcommand(1);
    auto opt = std::make_shared<TuneOptions>();
    auto* rms =
        tune->add_subcommand("rms_norm", "out = x / sqrt(mean(x^2) + eps) * w over rows of n");
    rms->add_option("--rows", opt->rows, "rows")->required();
    rms->add_option("--n", opt->n, "row length")->required();
    rms->add_option("--dtype", opt->dtype, "f32, f16 or bf16")
        ->check(CLI::IsMember({"f32", "f16", "bf16"}));
    auto* mv = tune->add_subcommand("matvec_q8", "y = W x with W and x in Q8_0 blocks (dp4a)");
    mv->add_option("--rows", opt->rows, "rows of W")->required();
    mv->add_option("--k", opt->k, "columns of W, a multiple of 64")->required();
    for (auto* sub : {rms, mv}) {
        sub->add_option("--device", opt->device, "device id, index or backend (default: the best)");
        sub->add_flag("--json", opt->json, "print one JSON object");
    }
    return {tune, [opt, rms] { return rms->parsed() ? tune_rms_norm(*opt) : tune_matvec(*opt); }};
}

}  // namespace kiln::cli
