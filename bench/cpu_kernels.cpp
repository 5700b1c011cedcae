// The CPU benchmark: user-written kernels (ops/user_kernels.hpp) and the shipped rms_norm on
// kiln's CPU backend, each beside the same kernel on PoCL (the OpenCL CPU device) and beside an
// outside peer where there is one — a plain OpenMP loop for (a+b)^2, OpenBLAS's sgemm (loaded at
// run time when installed), Halide's rms_norm and softmax (with --halide, the library
// bench/peers_halide.py builds), and for the 1 x 4096 rms_norm a direct call of the kernel's
// entry, which shows what a launch costs. Every figure is the median of wall-clock times of one
// launch and its wait, each timed in blocks of its own (bench_common.hpp: timed in turn, one
// runtime's spinning threads would slow the next); "spread" is the interquartile range over the
// median. Outputs of kiln and PoCL are compared bitwise.
//
//   bench_cpu_kernels [--repeats R] [--only NAME] [--source NAME] [--json FILE] [--halide LIB]
#include <array>
#include <cstring>
#include <functional>
#include <optional>

#include "bench_common.hpp"
#include "codegen/emit_c.hpp"
#include "kiln/buffer.hpp"
#include "kiln/compile.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "ops/user_kernels.hpp"
#include "peers/halide.hpp"
#include "peers/openblas.hpp"
#include "peers/openmp_loops.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/cpu/cpu_module.hpp"

namespace kiln::bench {
namespace {

// A workload: a kernel, its grid, its buffers (inputs with values, outputs with a count) and
// scalars, and what one launch moves or computes.
struct Workload {
    std::string name;
    ir::Kernel kernel;
    int64_t grid;
    std::vector<std::vector<float>> inputs;  // one per input buffer, in parameter order
    std::vector<size_t> outputs;             // element counts of output buffers, in order
    std::vector<Arg> scalars;
    double gb = 0;     // bytes a launch must move, GB
    double gflop = 0;  // floating-point work of a launch, GFLOP (0: not a compute figure)
};

// The kernel's launch arguments on one device (buffers made and filled there).
struct Placed {
    Device* device;
    std::shared_ptr<CompiledKernel> compiled;
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<Arg> args;
    void launch(int64_t grid) const {
        compiled->launch(grid, args);
        device->synchronize();
    }
    std::vector<uint8_t> output() const { return buffers.back()->download_bytes(); }
};

Placed place(Device& d, const Workload& w) {
    Placed p{&d, compile(d, w.kernel), {}, {}};
    size_t in = 0, out = 0, sc = 0;
    for (const auto& param : w.kernel.params) {
        if (!param.is_buffer) {
            p.args.push_back(w.scalars.at(sc++));
            continue;
        }
        if (param.access == ir::Access::read) {
            const auto& v = w.inputs.at(in++);
            p.buffers.push_back(std::make_unique<Buffer>(d, DType::f32, v.size()));
            p.buffers.back()->upload(v);
        } else {
            p.buffers.push_back(std::make_unique<Buffer>(d, DType::f32, w.outputs.at(out++)));
        }
        p.args.emplace_back(*p.buffers.back());
    }
    return p;
}

struct Series {
    std::string who;
    std::vector<double> ms;
};

std::string figure(const Series& s) {
    std::vector<double> v = s.ms;
    std::sort(v.begin(), v.end());
    const double med = median(v), q1 = v[v.size() / 4], q3 = v[(3 * v.size()) / 4];
    return fmt::format("{:.3f} ms (spread {:.0f}%)", med, med > 0 ? 100 * (q3 - q1) / med : 0);
}

std::vector<Workload> workloads() {
    std::vector<Workload> ws;
    const int64_t n = 4096, rows = 4096;
    const size_t cells = static_cast<size_t>(rows * n);
    const auto x = random_floats(cells, 1, 2.0f),
               w = random_floats(static_cast<size_t>(n), 2, 2.0f),
               g = random_floats(static_cast<size_t>(n), 3, 2.0f);
    const double row_gb = 2.0 * static_cast<double>(cells) * 4 / 1e9;
    for (int threads : {256, 1}) {
        const int block = threads == 1 ? 64 : 256;
        const std::string form = threads == 1 ? "thread/row" : "block/row";
        const int64_t grid = ops::rows_grid(rows, block, threads);
        ws.push_back({"softmax 4096^2 " + form,
                      ops::softmax_rows(n, block, threads),
                      grid,
                      {x},
                      {cells},
                      {},
                      row_gb});
        ws.push_back({"layer_norm 4096^2 " + form,
                      ops::layer_norm_rows(n, block, threads),
                      grid,
                      {x, g, w},
                      {cells},
                      {1e-5f},
                      row_gb});
        ws.push_back({"rms_norm 4096^2 " + form,
                      ops::rms_norm_rows(n, block, threads),
                      grid,
                      {x, w},
                      {cells},
                      {1e-6f},
                      row_gb});
    }
    ws.push_back({"rms_norm 1x4096 block/row",
                  ops::rms_norm_rows(n, 256, 256),
                  1,
                  {random_floats(static_cast<size_t>(n), 4, 2.0f), w},
                  {static_cast<size_t>(n)},
                  {1e-6f},
                  2.0 * static_cast<double>(n) * 4 / 1e9});
    const int64_t m = 1024, k = 1024, nn = 1024;
    ws.push_back({"sgemm 1024^3 8x4 regs, 32 threads",
                  ops::sgemm_blocked(k, nn, 8, 4, 32),
                  ops::sgemm_grid(m, nn, 8, 4, 32),
                  {random_floats(static_cast<size_t>(m * k), 5, 2.0f),
                   random_floats(static_cast<size_t>(k * nn), 6, 2.0f)},
                  {static_cast<size_t>(m * nn)},
                  {},
                  0,
                  2.0 * m * nn * k / 1e9});
    const int64_t big = int64_t{1} << 26;
    ws.push_back({"(a+b)^2 2^26",
                  ops::add_square(256),
                  big / 256,
                  {random_floats(static_cast<size_t>(big), 7, 2.0f),
                   random_floats(static_cast<size_t>(big), 8, 2.0f)},
                  {static_cast<size_t>(big)},
                  {},
                  3.0 * static_cast<double>(big) * 4 / 1e9});
    return ws;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    using namespace kiln;
    using namespace kiln::bench;
    try {
        Flags flags(argc, argv, {"--repeats", "--only", "--source", "--json", "--halide"},
                    "bench_cpu_kernels [--repeats R] [--only NAME] [--source NAME] [--json FILE] "
                    "[--halide LIB]");
        const HalidePeers halide = halide_peers(flags.text("--halide"));
        const int repeats = static_cast<int>(flags.integer("--repeats", 21, 3, 10000));
        Device* cpu = nullptr;
        Device* pocl = nullptr;
        for (Device* d : devices()) {
            if (d->info().backend == Backend::cpu && !cpu) cpu = d;
            if (d->info().backend == Backend::opencl && !is_gpu(d->info()) && !pocl) pocl = d;
        }
        if (!cpu) fail("no CPU device");
        const std::string only = flags.text("--only");
        const CblasSgemm blas = openblas_sgemm();
        std::vector<std::vector<std::string>> table;
        std::string json = "[\n";
        for (const Workload& w : workloads()) {
            if (!only.empty() && w.name.find(only) == std::string::npos) continue;
            if (flags.has("--source")) {
                const std::array<ir::Kernel, 1> one{w.kernel};
                fmt::print("{}\n", generate_source(Backend::cpu, one));
                continue;
            }
            Placed on_cpu = place(*cpu, w);
            std::optional<Placed> on_pocl;
            if (pocl) on_pocl = place(*pocl, w);
            Series kiln_s{"kiln cpu", {}}, pocl_s{"PoCL", {}}, peer_s{"", {}};
            // The peer: a plain loop, OpenBLAS, or a direct call of the kernel's entry.
            std::function<void()> peer;
            std::vector<float> peer_out;
            std::unique_ptr<Module> direct_module;
            std::vector<uint64_t> slots;  // the direct call's arguments, one 8-byte slot each
            std::vector<void*> values;
            if (w.name.rfind("(a+b)^2", 0) == 0) {
                peer_s.who = "OpenMP loop";
                peer_out.resize(w.outputs[0]);
                peer = [&] {
                    openmp_add_square(w.inputs[0].data(), w.inputs[1].data(), peer_out.data(),
                                      static_cast<int64_t>(peer_out.size()));
                };
            } else if (w.name.rfind("sgemm", 0) == 0 && blas) {
                peer_s.who = fmt::format("OpenBLAS {}", openblas_core());
                peer_out.resize(w.outputs[0]);
                peer = [&] {
                    sgemm_row_major(blas, 1024, 1024, 1024, w.inputs[0].data(), w.inputs[1].data(),
                                    peer_out.data());
                };
            } else if (halide.rms_norm && w.name.rfind("rms_norm 4096^2", 0) == 0) {
                peer_s.who = "Halide";
                peer_out.resize(w.outputs[0]);
                float eps = 0;
                std::memcpy(&eps, &w.scalars[0].bits, 4);
                peer = [&, eps] {
                    halide.rms_norm(w.inputs[0].data(), w.inputs[1].data(), eps, peer_out.data(),
                                    4096, 4096);
                };
            } else if (halide.softmax && w.name.rfind("softmax 4096^2", 0) == 0) {
                peer_s.who = "Halide";
                peer_out.resize(w.outputs[0]);
                peer = [&] { halide.softmax(w.inputs[0].data(), peer_out.data(), 4096, 4096); };
            } else if (w.grid == 1) {
                // The entry called directly on this thread, arguments packed once (ABI.md).
                peer_s.who = "direct call";
                const std::array<ir::Kernel, 1> one{w.kernel};
                direct_module = cpu->load(cpu->compile(generate_source(Backend::cpu, one)));
                auto* m = dynamic_cast<runtime::cpu::CpuModule*>(direct_module.get());
                const runtime::cpu::KernelEntry fn = m->entry(codegen::entry_name(w.kernel));
                slots.reserve(2 * on_cpu.args.size());
                size_t buffer = 0;
                for (const Arg& a : on_cpu.args) {
                    if (a.buffer) {
                        const auto* mem = dynamic_cast<const runtime::cpu::CpuMemory*>(
                            &on_cpu.buffers[buffer++]->memory());
                        slots.push_back(reinterpret_cast<uint64_t>(mem->data()));
                        slots.push_back(static_cast<uint64_t>(a.buffer->count()));
                    } else {
                        slots.push_back(a.bits);
                    }
                }
                for (auto& v : slots) values.push_back(&v);
                peer = [fn, &values] { fn(values.data(), 0, 1, 1); };
            }
            std::vector<std::function<void()>> calls{[&] { on_cpu.launch(w.grid); }};
            if (on_pocl) calls.push_back([&] { on_pocl->launch(w.grid); });
            if (peer) calls.push_back(peer);
            const auto ms = timed_in_blocks(repeats, calls);
            kiln_s.ms = ms[0];
            if (on_pocl) pocl_s.ms = ms[1];
            if (peer) peer_s.ms = ms.back();
            const bool same = !on_pocl || on_pocl->output() == on_cpu.output();
            const double k_med = median(kiln_s.ms);
            std::vector<std::string> row{w.name, figure(kiln_s)};
            row.push_back(on_pocl ? figure(pocl_s) : "-");
            row.push_back(on_pocl ? fmt::format("{:.2f}x", median(pocl_s.ms) / k_med) : "-");
            row.push_back(peer ? peer_s.who + " " + figure(peer_s) : "-");
            row.push_back(peer ? fmt::format("{:.2f}x", median(peer_s.ms) / k_med) : "-");
            row.push_back(w.gflop > 0 ? fmt::format("{:.0f} GFLOP/s", w.gflop / k_med * 1e3)
                                      : fmt::format("{:.1f} GB/s", w.gb / k_med * 1e3));
            row.push_back(same ? "yes" : "NO");
            table.push_back(row);
            json += fmt::format(
                "  {{\"kernel\": {}, \"kiln_ms\": {}, \"pocl_ms\": {}, \"peer\": {}, "
                "\"peer_ms\": {}, \"same_bits\": {}}},\n",
                json_quote(w.name), json_list(kiln_s.ms), json_list(pocl_s.ms),
                json_quote(peer_s.who), json_list(peer_s.ms), same ? "true" : "false");
            fmt::print(stderr, "{}: done\n", w.name);
        }
        if (flags.has("--source")) return 0;
        print_table({"kernel", "kiln cpu", "PoCL", "PoCL/kiln", "peer", "peer/kiln", "kiln rate",
                     "same bits"},
                    table);
        if (json.size() > 2) json.erase(json.size() - 2, 1);
        json += "]\n";
        if (flags.has("--json")) write_file(flags.text("--json"), json);
    } catch (const std::exception& e) {
        fmt::print(stderr, "bench_cpu_kernels: {}\n", e.what());
        return 2;
    }
    return 0;
}
