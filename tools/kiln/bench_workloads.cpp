// The workloads of `kiln bench`: graph cases timed through time_case (workloads/cases.hpp), shipped
// ops through their tuned entries and *_bench closures (the tuner's timing protocol), the device
// copy through time_dispatches; the CPU peers timed by wall clock around one call.
#include "bench_workloads.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench_common.hpp"
#include "case_timing.hpp"
#include "kiln/buffer.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "kiln/tune.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/attention.hpp"
#include "oracle/conv1d.hpp"
#include "oracle/matmul.hpp"
#include "oracle/matvec_q8.hpp"
#include "oracle/rms_norm.hpp"
#include "peers/halide.hpp"
#include "peers/openblas.hpp"
#include "peers/openmp_loops.hpp"
#include "workloads/cases.hpp"

namespace kiln::cli {
namespace {

using namespace ::kiln::bench;  // the peers (bench/peers) and bench_common.hpp
using Clock = std::chrono::steady_clock;
using Dims = std::vector<int64_t>;

// The oracle runs on the host, one multiply-add at a time; above this many it is skipped.
constexpr double kOracleBudget = 2e9;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The median wall-clock microseconds of `call` after two untimed warm-up calls.
double wall_us(int iters, const std::function<void()>& call) {
    call();
    call();
    std::vector<double> us;
    for (int i = 0; i < iters; ++i) {
        const auto t0 = Clock::now();
        call();
        us.push_back(ms_since(t0) * 1e3);
    }
    return median(us);
}

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

std::vector<float> floats_of(const std::vector<uint8_t>& b) {
    std::vector<float> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), v.size() * 4);
    return v;
}

Buffer upload(Device& d, const std::vector<float>& values) {
    Buffer b(d, DType::f32, values.size());
    b.upload(values);
    return b;
}

// ---- graph cases ----------------------------------------------------------------------------

// Host copies of a graph case's f32 inputs, for the CPU peers.
std::vector<std::vector<float>> host_inputs(const workloads::Case& c) {
    std::vector<std::vector<float>> out;
    for (const auto& t : c.inputs) out.push_back(floats_of(t.to_host_bytes()));
    return out;
}

BenchResult run_graph(Device& d, const BenchSettings& s, const std::string& kind,
                      const Dims& dims) {
    workloads::CaseOptions options;
    if (kind == "mul_rank4")
        options.shape = dims;
    else if (dims.size() == 1)
        options.n = dims[0];
    else
        options = {dims[1], dims[0], {}};
    const workloads::Case c = workloads::make_case(kind, d, options);
    const CaseTiming t = time_case(d, c, s.hits);
    BenchResult r;
    r.shape = c.shape;
    r.kiln_us = t.device_us();
    r.setup_ms = (t.miss.plan_us + t.miss.extract_us + t.miss.compile_us + t.miss.race_us) / 1e3;
    r.setup = fmt::format("planned, compiled, raced ({} launch{})", t.exec->launches.size(),
                          t.exec->launches.size() == 1 ? "" : "es");
    r.host_us = t.hit_us;
    std::vector<std::string> schedules;
    for (const auto& l : t.exec->launches) schedules.push_back(l.record.schedule);
    r.schedule = fmt::format("{}", fmt::join(schedules, " + "));
    r.bit_identical = t.identical;
    r.bytes = c.bytes;
    if (!runs_on_host_cpu(d)) return r;

    const auto in = host_inputs(c);
    std::vector<float> y(in[0].size());
    const HalidePeers halide = halide_peers(s.halide);
    auto add = [&](const std::string& name, const std::function<void()>& call) {
        r.peers.push_back({name, wall_us(s.iters, call)});
    };
    if (kind == "add_square") {
        add("OpenMP loop",
            [&] { openmp_add_square(in[0].data(), in[1].data(), y.data(), dims[0]); });
    } else if (kind == "mul_rank4") {
        add("OpenMP loop", [&] {
            openmp_mul_broadcast(in[0].data(), in[1].data(), y.data(), dims[0], dims[1],
                                 dims[2] * dims[3]);
        });
    } else if (kind == "softmax") {
        add("OpenMP loop", [&] { openmp_softmax_rows(in[0].data(), y.data(), dims[0], dims[1]); });
        if (halide.softmax)
            add("Halide", [&] {
                halide.softmax(in[0].data(), y.data(), static_cast<int>(dims[0]),
                               static_cast<int>(dims[1]));
            });
    } else if (kind == "layer_norm") {
        add("OpenMP loop", [&] {
            openmp_layer_norm_rows(in[0].data(), in[1].data(), in[2].data(), 1e-5f, y.data(),
                                   dims[0], dims[1]);
        });
    } else if (kind == "rms_norm") {
        add("OpenMP loop", [&] {
            openmp_rms_norm_rows(in[0].data(), in[1].data(), 1e-6f, y.data(), dims[0], dims[1]);
        });
        if (halide.rms_norm)
            add("Halide", [&] {
                halide.rms_norm(in[0].data(), in[1].data(), 1e-6f, y.data(),
                                static_cast<int>(dims[0]), static_cast<int>(dims[1]));
            });
    }
    return r;
}

// ---- the device copy --------------------------------------------------------------------------

BenchResult run_copy(Device& d, const BenchSettings& s, const Dims& dims) {
    const auto values = random_floats(static_cast<size_t>(dims[0]), 11, 2.0f);
    const size_t bytes = values.size() * 4;
    Buffer a = upload(d, values), b(d, DType::f32, values.size());
    BenchResult r;
    r.shape = fmt::format("{}", dims[0]);
    r.kiln_us = time_dispatches(d, s.iters, [&] { d.copy(b.memory(), a.memory(), bytes); }) * 1e3;
    r.setup = "nothing to compile";
    r.host_us = wall_us(s.hits, [&] {
        d.copy(b.memory(), a.memory(), bytes);
        d.synchronize();
    });
    r.schedule = "Device::copy";
    r.bit_identical = b.download_bytes() == bytes_of(values);
    r.bytes = 2.0 * static_cast<double>(bytes);
    if (runs_on_host_cpu(d)) {
        std::vector<float> y(values.size());
        r.peers.push_back({"OpenMP loop", wall_us(s.iters, [&] {
                               openmp_copy(values.data(), y.data(), dims[0]);
                           })});
        r.peers.push_back(
            {"memcpy", wall_us(s.iters, [&] { std::memcpy(y.data(), values.data(), bytes); })});
    }
    return r;
}

// ---- shipped ops through their tuned entries ----------------------------------------------------

// One shipped op: how to make its tuned entry, run a named schedule point (iters == 1: once;
// more: timed by the tuner's protocol), call the entry (a tuner hit once tuned) and compute its
// oracle (empty where too costly). `first` names the domain's first point, the tuner's default.
struct OpRun {
    std::string first;
    std::function<Tuned<Buffer>()> tuned;
    std::function<Timed<Buffer>(const std::string& schedule, int iters)> bench;
    std::function<void()> call;
    std::function<std::optional<std::vector<uint8_t>>()> oracle;
};

// Tunes the op (setup), checks the winner's output against the oracle and times the winner. With
// --quick nothing is tuned: the first point runs, its compile the setup, so that a smoke test
// does not compile the whole domain.
void run_op(Device& d, const BenchSettings& s, const OpRun& op, BenchResult& r) {
    const auto t0 = Clock::now();
    std::optional<Buffer> out;
    if (s.quick) {
        out = op.bench(op.first, 1).output;
        r.setup = "compiled (--quick: the first schedule, not tuned)";
        r.schedule = op.first;
    } else {
        Tuned<Buffer> tuned = op.tuned();
        out = tuned.run();
        const TuneReport& report = tuned.report();
        r.setup = report.hit ? "tuner hit: compiled only"
                             : fmt::format("tuned: {} variants benched", report.benched);
        r.schedule = report.winner;
    }
    d.synchronize();
    r.setup_ms = ms_since(t0);
    if (const auto want = op.oracle()) r.bit_identical = out->download_bytes() == *want;
    r.kiln_us = op.bench(r.schedule, s.iters).ms * 1e3;
    r.host_us = wall_us(s.hits, [&] {
        if (s.quick)
            (void)op.bench(op.first, 1);
        else
            op.call();
        d.synchronize();
    });
}

// OpenBLAS's sgemm over each batch, when the library loads.
void add_openblas(BenchResult& r, const BenchSettings& s, const std::vector<float>& a,
                  const std::vector<float>& b, const ops::MatmulShape& m) {
    const CblasSgemm sgemm = openblas_sgemm();
    if (!sgemm) return;
    std::vector<float> c(static_cast<size_t>(m.batch * m.m * m.n));
    r.peers.push_back({fmt::format("OpenBLAS sgemm ({})", openblas_core()), wall_us(s.iters, [&] {
                           for (int64_t i = 0; i < m.batch; ++i)
                               sgemm_row_major(sgemm, static_cast<int>(m.m), static_cast<int>(m.n),
                                               static_cast<int>(m.k), a.data() + i * m.m * m.k,
                                               b.data() + i * m.k * m.n, c.data() + i * m.m * m.n);
                       })});
}

BenchResult run_matmul(Device& d, const BenchSettings& s, const Dims& dims) {
    const ops::MatmulShape m{dims[0], dims[1], dims[2], dims[3]};
    const auto a = random_floats(static_cast<size_t>(m.batch * m.m * m.k), 21, 2.0f);
    const auto b = random_floats(static_cast<size_t>(m.batch * m.k * m.n), 22, 2.0f);
    const Buffer ab = upload(d, a), bb = upload(d, b);
    BenchResult r;
    r.shape = m.batch > 1 ? fmt::format("{}x{}x{}x{}", m.batch, m.m, m.n, m.k)
                          : fmt::format("{}x{}x{}", m.m, m.n, m.k);
    r.flops = 2.0 * static_cast<double>(m.batch * m.m * m.n) * static_cast<double>(m.k);
    r.bytes = 4.0 * static_cast<double>(m.batch * (m.m * m.k + m.k * m.n + m.m * m.n));
    r.compute_bound = true;
    OpRun op;
    op.first = ops::matmul_variants().front().name;
    op.tuned = [&] { return ops::matmul_tuned(d, ab, {}, bb, {}, m, DType::f32); };
    op.bench = [&](const std::string& p, int iters) {
        return ops::matmul_bench(d, ab, {}, bb, {}, m, DType::f32, ops::matmul_variant(p), iters);
    };
    op.call = [&] { (void)ops::matmul(d, ab, {}, bb, {}, m); };
    op.oracle = [&]() -> std::optional<std::vector<uint8_t>> {
        if (r.flops / 2 > kOracleBudget) return std::nullopt;
        return oracle::matmul(DType::f32, DType::f32, bytes_of(a), {}, bytes_of(b), {}, m);
    };
    run_op(d, s, op, r);
    if (runs_on_host_cpu(d)) add_openblas(r, s, a, b, m);
    return r;
}

BenchResult run_conv1d(Device& d, const BenchSettings& s, const Dims& dims) {
    ops::Conv1dShape c;
    c.batch = dims[0];
    c.in_channels = dims[1];
    c.length = dims[2];
    c.out_channels = dims[3];
    c.kernel = dims[4];
    c.params.padding = dims[4] / 2;
    const auto x = random_floats(static_cast<size_t>(c.batch * c.in_channels * c.length), 31, 2.0f);
    const auto w =
        random_floats(static_cast<size_t>(c.out_channels * c.in_channels * c.kernel), 32, 2.0f);
    const Buffer xb = upload(d, x), wb = upload(d, w);
    BenchResult r;
    r.shape = fmt::format("{}x{}x{} -> {} k{}", c.batch, c.in_channels, c.length, c.out_channels,
                          c.kernel);
    const double outputs = static_cast<double>(c.batch * c.out_channels * c.out_length());
    r.flops = 2.0 * outputs * static_cast<double>(c.in_channels * c.kernel);
    r.bytes = 4.0 * (static_cast<double>(x.size() + w.size()) + outputs);
    r.compute_bound = true;
    OpRun op;
    op.first = ops::conv1d_variants().front().name;
    op.tuned = [&] { return ops::conv1d_tuned(d, xb, {}, wb, c, DType::f32); };
    op.bench = [&](const std::string& p, int iters) {
        return ops::conv1d_bench(d, xb, {}, wb, c, DType::f32, ops::conv1d_variant(p), iters);
    };
    op.call = [&] { (void)ops::conv1d(d, xb, {}, wb, c); };
    op.oracle = [&]() -> std::optional<std::vector<uint8_t>> {
        if (r.flops / 2 > kOracleBudget) return std::nullopt;
        return oracle::conv1d(DType::f32, DType::f32, bytes_of(x), {}, bytes_of(w), c);
    };
    run_op(d, s, op, r);
    return r;
}

BenchResult run_attention(Device& d, const BenchSettings& s, const Dims& dims) {
    ops::AttentionShape a;
    a.batch = dims[0];
    a.heads = dims[1];
    a.seq_q = a.seq_k = dims[2];
    a.head_dim = dims[3];
    const ops::AttentionOptions options{.causal = true};
    const size_t count = static_cast<size_t>(a.batch * a.heads * a.seq_q * a.head_dim);
    const auto q = random_floats(count, 41, 2.0f), k = random_floats(count, 42, 2.0f),
               v = random_floats(count, 43, 2.0f);
    const Buffer qb = upload(d, q), kb = upload(d, k), vb = upload(d, v);
    BenchResult r;
    r.shape = fmt::format("{}x{}x{}x{} causal", a.batch, a.heads, a.seq_q, a.head_dim);
    // Two products of seq x seq x dim, half of them masked.
    r.flops = 2.0 * static_cast<double>(a.batch * a.heads * a.seq_q * a.seq_k * a.head_dim);
    r.bytes = 4.0 * 4.0 * static_cast<double>(count);
    r.compute_bound = true;
    OpRun op;
    op.first = ops::attention_variants().front().name;
    op.tuned = [&] { return ops::attention_tuned(d, qb, kb, vb, a, options); };
    op.bench = [&](const std::string& p, int iters) {
        return ops::attention_bench(d, qb, kb, vb, a, options, ops::attention_variant(p), iters);
    };
    op.call = [&] { (void)ops::attention(d, qb, kb, vb, a, options); };
    op.oracle = [&]() -> std::optional<std::vector<uint8_t>> {
        if (r.flops > kOracleBudget) return std::nullopt;
        return oracle::attention(DType::f32, DType::f32, bytes_of(q), bytes_of(k), bytes_of(v), a,
                                 true, ops::attention_scale(a, options));
    };
    run_op(d, s, op, r);
    return r;
}

BenchResult run_rms_norm_op(Device& d, const BenchSettings& s, const Dims& dims) {
    const int64_t rows = dims[0], n = dims[1];
    const auto x = random_floats(static_cast<size_t>(rows * n), 51, 2.0f);
    const auto w = random_floats(static_cast<size_t>(n), 52, 2.0f);
    const Buffer xb = upload(d, x), wb = upload(d, w);
    BenchResult r;
    r.shape = fmt::format("{}x{}", rows, n);
    r.bytes = 4.0 * static_cast<double>(2 * x.size() + w.size());
    OpRun op;
    op.first = ops::rms_norm_variants().front().name;
    op.tuned = [&] { return ops::rms_norm_tuned(d, xb, wb, n, 1e-6f); };
    op.bench = [&](const std::string& p, int iters) {
        return ops::rms_norm_bench(d, xb, wb, rows, n, 1e-6f, ops::rms_norm_variant(p), iters);
    };
    op.call = [&] { (void)ops::rms_norm(d, xb, wb, n, 1e-6f); };
    op.oracle = [&]() -> std::optional<std::vector<uint8_t>> {
        std::vector<uint8_t> out(x.size() * 4);
        oracle::rms_norm(DType::f32, n, 1e-6f, bytes_of(x), bytes_of(w), out);
        return out;
    };
    run_op(d, s, op, r);
    if (runs_on_host_cpu(d)) {
        std::vector<float> y(x.size());
        r.peers.push_back({"OpenMP loop", wall_us(s.iters, [&] {
                               openmp_rms_norm_rows(x.data(), w.data(), 1e-6f, y.data(), rows, n);
                           })});
    }
    return r;
}

const ops::MatvecSchedule& matvec_schedule(const std::string& name) {
    for (const auto& v : ops::matvec_q8_variants())
        if (name == v.name) return v.schedule;
    fail("matvec_q8: no variant '{}'", name);
}

BenchResult run_matvec_q8(Device& d, const BenchSettings& s, const Dims& dims) {
    const int64_t rows = dims[0], k = dims[1];
    const auto wq = ops::quantize_q8_0(random_floats(static_cast<size_t>(rows * k), 61, 2.0f));
    const auto xq = ops::quantize_q8_0(random_floats(static_cast<size_t>(k), 62, 2.0f));
    Buffer wb(d, DType::u8, wq.size()), xb(d, DType::u8, xq.size());
    wb.upload(wq);
    xb.upload(xq);
    BenchResult r;
    r.shape = fmt::format("{}x{}", rows, k);
    r.bytes = static_cast<double>(wq.size() + xq.size()) + 4.0 * static_cast<double>(rows);
    OpRun op;
    op.first = ops::matvec_q8_variants().front().name;
    op.tuned = [&] { return ops::matvec_q8_tuned(d, wb, xb, rows, k); };
    op.bench = [&](const std::string& p, int iters) {
        return ops::matvec_q8_bench(d, wb, xb, rows, k, matvec_schedule(p), iters);
    };
    op.call = [&] { (void)ops::matvec_q8(d, wb, xb, rows, k); };
    op.oracle = [&]() -> std::optional<std::vector<uint8_t>> {
        return bytes_of(oracle::matvec_q8(wq, xq, rows, k));
    };
    run_op(d, s, op, r);
    return r;
}

// ---- the table of workloads ---------------------------------------------------------------------

// A workload's kind and its sizes: {quick, CPU, GPU}.
struct Definition {
    std::string name, kind;
    std::array<Dims, 3> dims;
};

const Dims& dims_for(const Definition& def, const Device& d, const BenchSettings& s) {
    return def.dims[s.quick ? 0 : runs_on_host_cpu(d) ? 1 : 2];
}

BenchResult run_kind(const std::string& kind, Device& d, const BenchSettings& s, const Dims& dims) {
    if (kind == "copy") return run_copy(d, s, dims);
    if (kind == "matmul") return run_matmul(d, s, dims);
    if (kind == "conv1d") return run_conv1d(d, s, dims);
    if (kind == "attention") return run_attention(d, s, dims);
    if (kind == "rms_norm_op") return run_rms_norm_op(d, s, dims);
    if (kind == "matvec_q8") return run_matvec_q8(d, s, dims);
    return run_graph(d, s, kind, dims);
}

const std::vector<Definition>& definitions() {
    // Sizes: quick ones are odd, so blocks are filled and overflowed; the CPU's keep a full run to
    // minutes on two cores; the GPU's are the headline shapes of the notes and the GPU peers.
    static const std::vector<Definition> defs{
        {"copy", "copy", {Dims{10007}, {1 << 24}, {1 << 26}}},
        {"add_square_small", "add_square", {Dims{1000}, {1 << 18}, {1 << 18}}},
        {"add_square_large", "add_square", {Dims{70001}, {1 << 24}, {1 << 26}}},
        {"mul_rank4", "mul_rank4", {Dims{3, 5, 7, 9}, {9, 11, 32, 16}, {9, 11, 32, 16}}},
        {"softmax", "softmax", {Dims{5, 300}, {1024, 4096}, {4096, 4096}}},
        {"layer_norm", "layer_norm", {Dims{5, 300}, {1024, 4096}, {4096, 4096}}},
        {"rms_norm", "rms_norm", {Dims{5, 300}, {1024, 4096}, {4096, 4096}}},
        {"rms_norm_op", "rms_norm_op", {Dims{5, 300}, {1024, 4096}, {4096, 4096}}},
        {"matvec_q8", "matvec_q8", {Dims{7, 128}, {4096, 4096}, {4096, 4096}}},
        {"matmul_small", "matmul", {Dims{1, 17, 19, 23}, {1, 128, 128, 128}, {1, 256, 256, 256}}},
        {"matmul_large",
         "matmul",
         {Dims{1, 65, 70, 33}, {1, 512, 512, 512}, {1, 4096, 4096, 4096}}},
        {"matmul_batched", "matmul", {Dims{3, 9, 10, 11}, {8, 128, 128, 128}, {32, 512, 512, 512}}},
        {"conv1d_small",
         "conv1d",
         {Dims{1, 3, 40, 5, 3}, {1, 8, 1024, 16, 5}, {1, 8, 1024, 16, 5}}},
        {"conv1d_large",
         "conv1d",
         {Dims{2, 8, 100, 6, 5}, {4, 64, 2048, 64, 3}, {16, 256, 4096, 256, 3}}},
        {"attention_small", "attention", {Dims{1, 2, 70, 64}, {1, 4, 128, 64}, {1, 8, 256, 64}}},
        {"attention_large",
         "attention",
         {Dims{1, 2, 130, 32}, {1, 8, 512, 64}, {4, 32, 2048, 128}}},
    };
    return defs;
}

}  // namespace

bool runs_on_host_cpu(const Device& device) {
    return !is_gpu(device.info());
}

const std::vector<Workload>& bench_workloads() {
    static const std::vector<Workload> list = [] {
        std::vector<Workload> out;
        for (const Definition& def : definitions())
            out.push_back({def.name,
                           [&def](const Device& d, const BenchSettings& s) {
                               return PeerSpec{def.kind, dims_for(def, d, s)};
                           },
                           [&def](Device& d, const BenchSettings& s) {
                               BenchResult r = run_kind(def.kind, d, s, dims_for(def, d, s));
                               r.name = def.name;
                               return r;
                           }});
        return out;
    }();
    return list;
}

}  // namespace kiln::cli
