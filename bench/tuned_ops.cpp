// The autotuned ops on a device: every variant's median time (kiln::time_dispatches, L2 flushed
// on GPUs), the tuner's choice, a device copy of the same bytes for scale (and for matvec a pass
// that only reads W: the floor for any kernel reading it), the host cost of a tuner hit.
// KILN_L2_FLUSH=read times with a clean L2 instead of a dirty one (see
// time_dispatches). Figures for issue notes; peers (torch) are timed by shared/peers/torch_peers.py
// in the same run.
//   bench_tuned_ops [--device D] [--ops rms_norm,matvec_q8] [--small 1] [--json FILE]
#include <chrono>
#include <filesystem>
#include <random>

#include "bench_common.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/semantics.hpp"
#include "kiln/tune.hpp"
#include "ops/matvec_q8.hpp"
#include "ops/rms_norm.hpp"
#include "oracle/matvec_q8.hpp"

using namespace kiln;

namespace {

struct Row {
    std::string op, shape, device, variant;
    double ms = 0, gbps = 0;
    bool winner = false;
};

std::vector<Row> rows_out;
std::vector<std::string> extra_json;

double copy_ms(Device& d, const Buffer& src) {
    Buffer dst(d, src.dtype(), src.count());
    return time_dispatches(d, TUNE_ITERS, [&] { d.copy(dst.memory(), src.memory(), src.bytes()); });
}

// A pass that only reads `src` (whole 16-byte groups, grid-stride, the words XORed; it stores
// only if the XOR equals `never`, which it does not): the time any kernel that must read those
// bytes once could reach, under the same L2 flush as the ops.
double read_only_ms(Device& d, const Buffer& src) {
    constexpr int kBlock = 256, kBlocksPerUnit = 8;
    KernelBuilder k("read_only_pass", kBlock);
    auto in = k.input("src", DType::u32);
    auto out = k.output("out", DType::u32);
    Expr never = k.scalar("never", DType::u32);
    Var acc = k.let(Expr(0u), "acc");
    k.for_(
        k.absolute_pos() * 4, in.len() - 3,
        [&](Expr i) {
            const std::vector<Var> v = k.load_vector(in, i, 4, "w");
            acc = acc ^ v[0] ^ v[1] ^ v[2] ^ v[3];
        },
        k.grid_size() * (kBlock * 4));
    k.if_(acc == never, [&] { out[0] = acc; });
    auto kernel = compile(d, k.finish());
    const Buffer words = src.view(DType::u32);
    Buffer sink(d, DType::u32, 1);
    const int64_t grid = int64_t{std::max(d.info().compute_units, 1)} * kBlocksPerUnit;
    return time_dispatches(d, TUNE_ITERS, [&] {
        kernel->launch(grid, {words, sink, uint32_t{0x9e3779b9u}});
    });
}

void record_variants(const std::string& op, const std::string& shape, Device& d, double bytes,
                     const TuneReport& report) {
    for (const auto& [name, ms] : report.variant_ms)
        rows_out.push_back(
            {op, shape, d.info().id, name, ms, bytes / (ms * 1e-3) / 1e9, name == report.winner});
}

// Host cost of a hit: Tuned::run with a closure that does no work, so only the lookup, the key's
// digest and the dispatch are timed.
double tuner_hit_us(Device& d, size_t variants) {
    const auto root =
        std::filesystem::temp_directory_path() / fmt::format("kiln-bench-hit-{}", getpid());
    Tuner tuner(root);
    auto make = [&] {
        Tuned<int> t("bench_hit", "shape=1", d);
        for (size_t i = 0; i < variants; ++i)
            t.variant(
                fmt::format("v{}", i),
                [](int) {
                    return Timed<int>{1, 1.0};
                },
                "id");
        return t;
    };
    make().run(tuner);  // the miss
    const int n = 2000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) make().run(tuner);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        n;
    std::filesystem::remove_all(root);
    return us;
}

void bench_matvec(Device& d, int64_t rows, int64_t k, Tuner& tuner) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist;
    std::vector<float> w(static_cast<size_t>(rows * k)), x(static_cast<size_t>(k));
    for (auto& v : w) v = dist(rng);
    for (auto& v : x) v = dist(rng);
    const auto wq = oracle::quantize_q8_0(w), xq = oracle::quantize_q8_0(x);
    Buffer bw(d, DType::u8, wq.size()), bx(d, DType::u8, xq.size());
    bw.upload(wq);
    bx.upload(xq);
    const std::string shape = fmt::format("{}x{}", rows, k);
    const double bytes = static_cast<double>(wq.size() + xq.size() + 4 * rows);
    Tuned<Buffer> t = ops::matvec_q8_tuned(d, bw, bx, rows, k);
    t.run(tuner);
    record_variants("matvec_q8", shape, d, bytes, t.report());
    const double c = copy_ms(d, bw);
    rows_out.push_back({"matvec_q8", shape, d.info().id, "device copy of the Q8_0 bytes", c,
                        2.0 * static_cast<double>(bw.bytes()) / (c * 1e-3) / 1e9, false});
    const double r = read_only_ms(d, bw);
    rows_out.push_back({"matvec_q8", shape, d.info().id, "a pass that only reads the Q8_0 bytes", r,
                        static_cast<double>(bw.bytes()) / (r * 1e-3) / 1e9, false});
}

void bench_rms_norm(Device& d, int64_t rows, int64_t n, Tuner& tuner) {
    std::mt19937 rng(2);
    std::normal_distribution<float> dist;
    std::vector<float> x(static_cast<size_t>(rows * n)), w(static_cast<size_t>(n));
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    Buffer bx(d, DType::f32, x.size()), bw(d, DType::f32, w.size());
    bx.upload(x);
    bw.upload(w);
    const std::string shape = fmt::format("{}x{}", rows, n);
    const double bytes = 8.0 * static_cast<double>(rows * n);
    Tuned<Buffer> t = ops::rms_norm_tuned(d, bx, bw, n, 1e-6f);
    t.run(tuner);
    record_variants("rms_norm", shape, d, bytes, t.report());
    const double c = copy_ms(d, bx);
    rows_out.push_back({"rms_norm", shape, d.info().id, "device copy of x", c,
                        2.0 * static_cast<double>(bx.bytes()) / (c * 1e-3) / 1e9, false});
}

int run(int argc, char** argv) {
    bench::Flags flags(
        argc, argv, {"--device", "--ops", "--small", "--json"},
        "bench_tuned_ops [--device D] [--ops rms_norm,matvec_q8] [--small 1] [--json FILE]");
    const std::string ops = flags.text("--ops", "rms_norm,matvec_q8");
    const bool small = flags.integer("--small", 0, 0, 1) != 0;
    // A private tuner: every run benches every variant.
    const auto root =
        std::filesystem::temp_directory_path() / fmt::format("kiln-bench-tuned-{}", getpid());
    Tuner tuner(root);
    for (Device* d : bench::selected_devices(flags)) {
        if (!flags.has("--device") && !bench::is_gpu(d->info()) && !small) continue;
        if (ops.find("rms_norm") != std::string::npos) {
            const std::vector<std::pair<int64_t, int64_t>> shapes =
                small ? std::vector<std::pair<int64_t, int64_t>>{{1, 4096}, {32, 4096}}
                      : std::vector<std::pair<int64_t, int64_t>>{
                            {1, 4096}, {32, 4096}, {4096, 4096}, {16384, 8192}};
            for (auto [r, n] : shapes) bench_rms_norm(*d, r, n, tuner);
        }
        if (ops.find("matvec_q8") != std::string::npos) {
            const std::vector<std::pair<int64_t, int64_t>> shapes =
                small ? std::vector<std::pair<int64_t, int64_t>>{{256, 4096}}
                      : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {14336, 4096}};
            for (auto [r, k] : shapes) bench_matvec(*d, r, k, tuner);
        }
        const double hit = tuner_hit_us(*d, 8);
        const char* flush = std::getenv("KILN_L2_FLUSH");
        extra_json.push_back(fmt::format(
            "{{\"device\": {}, \"tuner_hit_host_us\": {:.3f}, \"l2_flush\": {}}}",
            bench::json_quote(d->info().id), hit, bench::json_quote(flush ? flush : "write")));
        fmt::print("{}: host cost of a tuner hit (8 variants, no launch): {:.2f} us\n",
                   d->info().id, hit);
    }
    std::filesystem::remove_all(root);
    std::vector<std::vector<std::string>> table;
    for (const auto& r : rows_out)
        table.push_back({r.op, r.shape, r.variant + (r.winner ? " *" : ""),
                         fmt::format("{:.2f}", r.ms * 1e3), fmt::format("{:.0f}", r.gbps),
                         r.device});
    bench::print_table({"op", "shape", "variant (* = tuner's choice)", "us", "GB/s", "device"},
                       table);
    if (flags.has("--json")) {
        std::string json = "{\"rows\": [";
        for (size_t i = 0; i < rows_out.size(); ++i) {
            const Row& r = rows_out[i];
            json += fmt::format(
                "{}\n {{\"op\": {}, \"shape\": {}, \"device\": {}, \"variant\": {}, \"us\": "
                "{:.3f}, "
                "\"GB/s\": {:.1f}, \"winner\": {}}}",
                i ? "," : "", bench::json_quote(r.op), bench::json_quote(r.shape),
                bench::json_quote(r.device), bench::json_quote(r.variant), r.ms * 1e3, r.gbps,
                r.winner ? "true" : "false");
        }
        json += "],\n \"tuner\": [" + fmt::format("{}", fmt::join(extra_json, ", ")) + "]}\n";
        bench::write_file(flags.text("--json"), json);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const Error& e) {
        std::fprintf(stderr, "bench_tuned_ops: error: %s\n", e.what());
        return 2;
    }
}
