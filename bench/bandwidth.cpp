// Memory bandwidth per device: an f32 elementwise kernel y = x * a + b (each thread does 4
// elements a grid apart, so neighbouring threads touch neighbouring addresses) beside a plain
// device copy of the same bytes. GB/s counts 8 bytes per element (one read, one write).
//
//   bandwidth [--device D] [--n N] [--block B] [--repeats R] [--json FILE]
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"

using namespace kiln;

namespace {

constexpr int elements_per_thread = 4;

ir::Kernel axpb_kernel(int block) {
    KernelBuilder k("bench_axpb", block);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr a = k.scalar("a", DType::f32);
    Expr b = k.scalar("b", DType::f32);
    k.require(x.len() == y.len(), "x and y have the same length");
    Var pos = k.let(k.absolute_pos());
    Var stride = k.let(k.grid_size() * block);
    k.unroll(0, elements_per_thread, [&](Expr e) {
        Var i = k.let(pos + e * stride);
        k.if_(i < y.len(), [&] { y[i] = x[i] * a + b; });
    });
    return k.finish();
}

struct Result {
    std::string device;
    int64_t n;
    int block;
    double kernel_ms, copy_ms;
    bool identical;
    double gbps(double ms) const { return 8.0 * static_cast<double>(n) / (ms * 1e6); }
};

Result measure(Device& d, int64_t n, int block, int repeats) {
    const float a = 1.5f, b = -0.25f;
    std::vector<float> hx(static_cast<size_t>(n));
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = static_cast<float>(i % 1000) * 0.001f - 0.5f;
    Buffer x(d, DType::f32, hx.size()), y(d, DType::f32, hx.size()), z(d, DType::f32, hx.size());
    x.upload(hx);
    auto kernel = compile(d, axpb_kernel(block));
    const int64_t per_block = int64_t{block} * elements_per_thread;
    const int64_t grid = (n + per_block - 1) / per_block;

    kernel->launch(grid, {x, y, a, b});  // warm-up, and the result to check
    const auto got = y.download<float>();
    bool identical = true;
    for (size_t i = 0; i < hx.size() && identical; ++i) {
        const float prod = hx[i] * a;
        identical = std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(prod + b);
    }

    std::vector<double> kernel_ms, copy_ms;
    d.copy(z.memory(), x.memory(), x.bytes());
    for (int r = 0; r < repeats; ++r) {
        kernel_ms.push_back(d.time_ms([&] { kernel->launch(grid, {x, y, a, b}); }));
        copy_ms.push_back(d.time_ms([&] { d.copy(z.memory(), x.memory(), x.bytes()); }));
    }
    return {d.info().id, n, block, bench::median(kernel_ms), bench::median(copy_ms), identical};
}

int run(int argc, char** argv) {
    bench::Flags flags(argc, argv, {"--device", "--n", "--block", "--repeats", "--json"},
                       "bandwidth [--device D] [--n N (default 2^26 on GPUs, 2^24 elsewhere)] "
                       "[--block B (default 256)] [--repeats R (default 20)] [--json FILE]");
    const int block = static_cast<int>(flags.integer("--block", 256, 1, 1024));
    const int repeats = static_cast<int>(flags.integer("--repeats", 20, 1, 10000));
    std::vector<Result> results;
    bool all_identical = true;
    for (Device* d : bench::selected_devices(flags)) {
        const int64_t fallback = bench::is_gpu(d->info()) ? int64_t{1} << 26 : int64_t{1} << 24;
        const int64_t n = flags.integer("--n", fallback, 1, int64_t{1} << 30);
        results.push_back(measure(*d, n, block, repeats));
        all_identical = all_identical && results.back().identical;
    }

    std::vector<std::vector<std::string>> table;
    std::string json = fmt::format(
        "{{\"benchmark\": \"bandwidth\", \"repeats\": {}, \"bytes_per_element\": 8, \"results\": [",
        repeats);
    for (size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        const double kg = r.gbps(r.kernel_ms), cg = r.gbps(r.copy_ms);
        table.push_back({r.device, std::to_string(r.n), std::to_string(r.block),
                         fmt::format("{:.4f}", r.kernel_ms), fmt::format("{:.1f}", kg),
                         fmt::format("{:.4f}", r.copy_ms), fmt::format("{:.1f}", cg),
                         fmt::format("{:.2f}", kg / cg), r.identical ? "yes" : "no"});
        json += fmt::format(
            "{}\n  {{\"device\": {}, \"n\": {}, \"block\": {}, \"kernel_ms\": {:.6g}, "
            "\"kernel_gbps\": {:.6g}, \"copy_ms\": {:.6g}, \"copy_gbps\": {:.6g}, "
            "\"ratio\": {:.6g}, \"bit_identical\": {}}}",
            i ? "," : "", bench::json_quote(r.device), r.n, r.block, r.kernel_ms, kg, r.copy_ms, cg,
            kg / cg, r.identical ? "true" : "false");
    }
    json += "\n]}\n";
    fmt::print("y = x * a + b over f32 vs a device copy; median of {} launches\n", repeats);
    bench::print_table({"device", "n", "block", "kernel ms", "kernel GB/s", "copy ms", "copy GB/s",
                        "kernel/copy", "bit-identical"},
                       table);
    if (flags.has("--json")) bench::write_file(flags.text("--json"), json);
    return all_identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        fmt::print(stderr, "bandwidth: error: {}\n", e.what());
        return 2;
    }
}
