// The autotuned ops on a device: every variant's median time (kiln::time_dispatches, L2 flushed
// on GPUs), the tuner's choice, a device copy of the same bytes for scale (and for matvec a pass
// that only reads W: the floor for any kernel reading it), the host cost of a tuner hit (bare,
// and of each op's entry point).
// KILN_L2_FLUSH=read times with a clean L2 instead of a dirty one (see time_dispatches).
// On GPUs every row is also timed as a steady stream over rotating cold inputs, queued (timing
// "stream") and replayed from a recording (timing "graph"; stream_timing.hpp). Figures for issue
// notes; peers (torch) are timed in the same run by shared/peers/torch_peers.py (flush) and
// bench/peers_stream.py (stream and graph).
//   bench_tuned_ops [--device D] [--ops rms_norm,matvec_q8] [--small 1] [--json FILE]
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <span>

#include "bench_common.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "kiln/semantics.hpp"
#include "kiln/tune.hpp"
#include "stream_timing.hpp"

using namespace kiln;

namespace {

struct Row {
    std::string op, shape, device, variant;
    double ms = 0, gbps = 0;
    bool winner = false;
    std::string timing = "flush";  // time_dispatches, or "stream" / "graph" (stream_timing.hpp)
};

std::vector<Row> rows_out;
std::vector<std::string> extra_json;

double copy_ms(Device& d, const Buffer& src) {
    Buffer dst(d, src.dtype(), src.count());
    return time_dispatches(d, TUNE_ITERS, [&] { d.copy(dst.memory(), src.memory(), src.bytes()); });
}

// A pass that only reads `src` (whole 16-byte groups, grid-stride, the words XORed; it stores
// only if the XOR equals `never`, which it does not): the time any kernel that must read those
// bytes once could reach. `evict_first` reads them as the matvec variants that stream W do.
struct ReadOnlyPass {
    static constexpr int kBlock = 256, kBlocksPerUnit = 8;
    std::shared_ptr<CompiledKernel> kernel;
    Buffer sink;
    int64_t grid;

    ReadOnlyPass(Device& d, bool evict_first)
        : kernel(compile(d, build(evict_first))),
          sink(d, DType::u32, 1),
          grid(int64_t{std::max(d.info().compute_units, 1)} * kBlocksPerUnit) {}
    void launch(const Buffer& src) {
        kernel->launch(grid, {src.view(DType::u32), sink, uint32_t{0x9e3779b9u}});
    }
    static const char* row(bool evict_first) {
        return evict_first ? "a pass that only reads the Q8_0 bytes, evict-first"
                           : "a pass that only reads the Q8_0 bytes";
    }

  private:
    static ir::Kernel build(bool evict_first) {
        KernelBuilder k("read_only_pass", kBlock);
        auto in = k.input("src", DType::u32);
        if (evict_first) k.streaming(in);
        auto out = k.output("out", DType::u32);
        Expr never = k.scalar("never", DType::u32);
        Var acc = k.let(DType::u32, 0u, "acc");
        k.for_(
            k.absolute_pos() * 4, in.len() - 3,
            [&](Expr i) {
                const std::vector<Var> v = k.load_vector(in, i, 4, "w");
                acc = acc ^ v[0] ^ v[1] ^ v[2] ^ v[3];
            },
            k.grid_size() * (kBlock * 4));
        k.if_(acc == never, [&] { out[0] = acc; });
        return k.finish();
    }
};

double gbps(double bytes, double ms) {
    return bytes / (ms * 1e-3) / 1e9;
}

void record_variants(const std::string& op, const std::string& shape, Device& d, double bytes,
                     const TuneReport& report) {
    for (const auto& [name, ms] : report.variant_ms)
        rows_out.push_back(
            {op, shape, d.info().id, name, ms, gbps(bytes, ms), name == report.winner});
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

// Host cost of a hit of an op's entry point (`call`, returning its output): after one call that
// tunes or hits, `n` calls timed on the host clock, each output dropped as the next call comes,
// as a caller's loop would; the launches are queued, not waited for.
double op_hit_us(Device& d, const std::function<Buffer()>& call) {
    constexpr int n = 200;
    call();
    d.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) call();
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        n;
    d.synchronize();
    return us;
}

// The host cost of a hit of ops::rms_norm (1 x 4096, f32) and of ops::matvec_q8 (256 x 4096).
std::pair<double, double> ops_hit_us(Device& d, Tuner& tuner) {
    const int64_t n = 4096, rows = 256;
    Buffer x(d, DType::f32, n), w(d, DType::f32, n);
    std::vector<float> ones(n, 1.0f);
    x.upload(ones);
    w.upload(ones);
    const double rms = op_hit_us(d, [&] { return ops::rms_norm(d, x, w, n, 1e-6f, tuner); });
    const auto wq = ops::quantize_q8_0(std::vector<float>(static_cast<size_t>(rows * n), 0.5f));
    const auto xq = ops::quantize_q8_0(ones);
    Buffer bw(d, DType::u8, wq.size()), bx(d, DType::u8, xq.size());
    bw.upload(wq);
    bx.upload(xq);
    const double matvec = op_hit_us(d, [&] { return ops::matvec_q8(d, bw, bx, rows, n, tuner); });
    return {rms, matvec};
}

// Times `launch(set)` as a steady stream over `sets` input sets, queued and replayed from a
// recording (stream_timing.hpp), and records the two rows.
void record_stream(const std::string& op, const std::string& shape, Device& d, int sets,
                   const std::string& variant, double bytes, bool winner,
                   const std::function<void(int)>& launch) {
    const bench::StreamTiming s = bench::stream_ms(d, sets, launch);
    rows_out.push_back({op, shape, d.info().id,
                        variant + (s.host_kept_up ? "" : " (host fell behind)"), s.ms,
                        gbps(bytes, s.ms), winner, "stream"});
    const double g = bench::graph_ms(d, sets, launch);
    rows_out.push_back({op, shape, d.info().id, variant, g, gbps(bytes, g), winner, "graph"});
}

// Every row of bench_matvec again as a steady stream over rotating copies of W.
void stream_matvec(Device& d, const Buffer& bw, const Buffer& bx, int64_t rows, int64_t k,
                   const std::string& shape, std::span<ReadOnlyPass> readers,
                   const std::string& winner) {
    const int sets = bench::stream_sets(static_cast<double>(bw.bytes()));
    std::vector<Buffer> ws, words, copies;  // words: each W as the kernels' u32 view
    for (int i = 0; i < sets; ++i) {
        ws.emplace_back(d, DType::u8, bw.count());
        d.copy(ws.back().memory(), bw.memory(), bw.bytes());
        words.push_back(ws.back().view(DType::u32));
        copies.emplace_back(d, DType::u8, bw.count());
    }
    const double bytes =
        static_cast<double>(bw.bytes() + bx.bytes() + 4 * static_cast<size_t>(rows));
    Buffer y(d, DType::f32, static_cast<size_t>(rows));
    const Buffer x = bx.view(DType::u32);
    auto add = [&](const std::string& variant, double moved, bool is_winner,
                   const std::function<void(int)>& launch) {
        record_stream("matvec_q8", shape, d, sets, variant, moved, is_winner, launch);
    };
    for (const ops::MatvecVariant& v : ops::matvec_q8_variants()) {
        if (!ops::matvec_q8_serves(v.schedule, k)) continue;
        auto kernel = compile(d, ops::matvec_q8_kernel(v.schedule));
        const int64_t grid = ops::matvec_q8_grid(rows, v.schedule, d.info().compute_units);
        add(v.name, bytes, v.name == winner, [&](int i) {
            kernel->launch(grid, {words[i], x, y});
        });
    }
    add("device copy of the Q8_0 bytes", 2.0 * static_cast<double>(bw.bytes()), false,
        [&](int i) { d.copy(copies[i].memory(), ws[i].memory(), bw.bytes()); });
    for (bool evict_first : {false, true})
        add(ReadOnlyPass::row(evict_first), static_cast<double>(bw.bytes()), false,
            [&](int i) { readers[evict_first].launch(ws[i]); });
}

void bench_matvec(Device& d, int64_t rows, int64_t k, Tuner& tuner) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist;
    std::vector<float> w(static_cast<size_t>(rows * k)), x(static_cast<size_t>(k));
    for (auto& v : w) v = dist(rng);
    for (auto& v : x) v = dist(rng);
    const auto wq = ops::quantize_q8_0(w), xq = ops::quantize_q8_0(x);
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
    std::array<ReadOnlyPass, 2> readers{ReadOnlyPass(d, false), ReadOnlyPass(d, true)};
    for (bool evict_first : {false, true}) {
        const double r = time_dispatches(d, TUNE_ITERS, [&] { readers[evict_first].launch(bw); });
        rows_out.push_back({"matvec_q8", shape, d.info().id, ReadOnlyPass::row(evict_first), r,
                            gbps(static_cast<double>(bw.bytes()), r), false});
    }
    if (bench::is_gpu(d.info()))
        stream_matvec(d, bw, bx, rows, k, shape, readers, t.report().winner);
}

// Every row of bench_rms_norm again as a steady stream over rotating copies of x (and outputs).
void stream_rms_norm(Device& d, const Buffer& bx, const Buffer& bw, int64_t rows, int64_t n,
                     const std::string& shape, const std::string& winner) {
    const int sets = bench::stream_sets(2.0 * static_cast<double>(bx.bytes()));
    std::vector<Buffer> xs, outs;
    for (int i = 0; i < sets; ++i) {
        xs.emplace_back(d, bx.dtype(), bx.count());
        d.copy(xs.back().memory(), bx.memory(), bx.bytes());
        outs.emplace_back(d, bx.dtype(), bx.count());
    }
    const double bytes = 2.0 * static_cast<double>(bx.bytes());
    auto add = [&](const std::string& variant, bool is_winner,
                   const std::function<void(int)>& launch) {
        record_stream("rms_norm", shape, d, sets, variant, bytes, is_winner, launch);
    };
    const float eps = 1e-6f;
    for (const ops::RmsNormSchedule& v : ops::rms_norm_variants()) {
        auto kernel = compile(d, ops::rms_norm_kernel(bx.dtype(), n, v));
        const int64_t grid = ops::rms_norm_grid(rows, v);
        add(v.name, v.name == winner, [&](int i) {
            kernel->launch(grid, {xs[i], bw, outs[i], eps});
        });
        // torch's caching allocator hands its peers the block the previous output freed, so
        // their outputs land on the same lines launch after launch: the winner again that way.
        if (v.name == winner)
            add(v.name + " (one output buffer)", true, [&](int i) {
                kernel->launch(grid, {xs[i], bw, outs[0], eps});
            });
    }
    add("device copy of x", false,
        [&](int i) { d.copy(outs[i].memory(), xs[i].memory(), bx.bytes()); });
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
    if (bench::is_gpu(d.info())) stream_rms_norm(d, bx, bw, rows, n, shape, t.report().winner);
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
        const auto [rms_hit, matvec_hit] = ops_hit_us(*d, tuner);
        const char* flush = std::getenv("KILN_L2_FLUSH");
        extra_json.push_back(fmt::format(
            "{{\"device\": {}, \"tuner_hit_host_us\": {:.3f}, \"rms_norm_hit_host_us\": {:.3f}, "
            "\"matvec_q8_hit_host_us\": {:.3f}, \"l2_flush\": {}}}",
            bench::json_quote(d->info().id), hit, rms_hit, matvec_hit,
            bench::json_quote(flush ? flush : "write")));
        fmt::print("{}: host cost of a tuner hit (8 variants, no launch): {:.2f} us\n",
                   d->info().id, hit);
        fmt::print(
            "{}: host cost of a hit of ops::rms_norm (1x4096): {:.2f} us, of ops::matvec_q8 "
            "(256x4096): {:.2f} us (checks, variant set, key, lookup, output, launch; where "
            "launches "
            "run synchronously, as on the CPU, the run too)\n",
            d->info().id, rms_hit, matvec_hit);
    }
    std::filesystem::remove_all(root);
    // Each shape's rows (in the order the shapes ran) grouped by timing: flush, stream, graph.
    std::map<std::pair<std::string, std::string>, size_t> shape_order;
    for (const Row& r : rows_out) shape_order.try_emplace({r.op, r.shape}, shape_order.size());
    auto sort_key = [&](const Row& r) {
        const int timing = r.timing == "flush" ? 0 : r.timing == "stream" ? 1 : 2;
        return std::pair{shape_order.at({r.op, r.shape}), timing};
    };
    std::stable_sort(rows_out.begin(), rows_out.end(),
                     [&](const Row& a, const Row& b) { return sort_key(a) < sort_key(b); });
    std::vector<std::vector<std::string>> table;
    for (const auto& r : rows_out)
        table.push_back({r.op, r.shape, r.timing, r.variant + (r.winner ? " *" : ""),
                         fmt::format("{:.2f}", r.ms * 1e3), fmt::format("{:.0f}", r.gbps),
                         r.device});
    bench::print_table(
        {"op", "shape", "timing", "variant (* = tuner's choice)", "us", "GB/s", "device"}, table);
    if (flags.has("--json")) {
        std::string json = "{\"rows\": [";
        for (size_t i = 0; i < rows_out.size(); ++i) {
            const Row& r = rows_out[i];
            json += fmt::format(
                "{}\n {{\"op\": {}, \"shape\": {}, \"timing\": {}, \"device\": {}, "
                "\"variant\": {}, \"us\": {:.3f}, \"GB/s\": {:.1f}, \"winner\": {}}}",
                i ? "," : "", bench::json_quote(r.op), bench::json_quote(r.shape),
                bench::json_quote(r.timing), bench::json_quote(r.device),
                bench::json_quote(r.variant), r.ms * 1e3, r.gbps, r.winner ? "true" : "false");
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
