// Compile latency per device for two typical kernels (elementwise math, a canonical fold):
// a first compile (codegen + compiler + load, nothing cached), a warm disk-cache load, and a
// memory-cache hit. Runs on a fresh temporary cache directory, removed at the end.
//
//   compile_latency [--device D] [--repeats R] [--json FILE]
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"

using namespace kiln;

namespace {

// y = sqrt(|x| * c + 1) * x + c / (1 + |x|): the constant c makes each repeat a new kernel.
ir::Kernel elementwise_kernel(float c) {
    KernelBuilder k("bench_elementwise", 256);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] {
        Var v = k.let(x[i]);
        Var m = k.let(abs(v));
        y[i] = sqrt(m * c + 1.0f) * v + c / (m + 1.0f);
    });
    return k.finish();
}

// out[row] = c * sum_i x[row, i]^2 with the canonical fold (32 lanes, chunks of 4), 32 threads.
ir::Kernel fold_kernel(float c) {
    const int n = 1024, threads = 32;
    KernelBuilder k("bench_row_sumsq", 128);
    auto x = k.input("x", DType::f32);
    auto out = k.output("out", DType::f32);
    k.require(out.len() > 0 && x.len() == out.len() * n, "x holds 1024 elements per row");
    Var row = k.let(k.absolute_pos() / threads);
    Var src = k.let(min(row, out.len() - 1));
    Var sum = k.fold(DType::f32, n, Fold::sum().lanes(32).chunk(4).threads(threads), [&](Expr i) {
        Expr v = x[src * n + i];
        return v * v;
    });
    k.if_(row < out.len() && k.thread_index() % threads == 0, [&] { out[row] = sum * c; });
    return k.finish();
}

struct Timed {
    double wall_ms;
    std::shared_ptr<CompiledKernel> kernel;
    const CompileInfo& info() const { return kernel->info(); }
};

Timed timed_compile(Device& d, const ir::Kernel& kernel) {
    const auto t0 = std::chrono::steady_clock::now();
    auto compiled = compile(d, kernel);
    const auto t1 = std::chrono::steady_clock::now();
    return {std::chrono::duration<double, std::milli>(t1 - t0).count(), std::move(compiled)};
}

struct Row {
    std::string device, kernel;
    std::vector<double> first, codegen, compiler, load, disk, memory;
};

Row measure(Device& d, const std::string& name, const std::function<ir::Kernel(float)>& make,
            int repeats) {
    Row row{d.info().id, name, {}, {}, {}, {}, {}, {}};
    // First compiles: a distinct constant each time, so each is a real compile.
    for (int r = 0; r < repeats; ++r) {
        clear_memory_cache();
        Timed t = timed_compile(d, make(1.0f + 0.25f * static_cast<float>(r)));
        if (t.info().disk_hit)
            fail("{} {}: first compile {} was a cache hit; expected a fresh cache", row.device,
                 name, r);
        row.first.push_back(t.wall_ms);
        row.codegen.push_back(t.info().codegen_ms);
        row.compiler.push_back(t.info().compile_ms);
        row.load.push_back(t.info().load_ms);
    }
    // Warm disk cache: forget the memory cache, compile the first kernel again.
    std::shared_ptr<CompiledKernel> loaded;
    for (int r = 0; r < repeats; ++r) {
        clear_memory_cache();
        Timed t = timed_compile(d, make(1.0f));
        if (!t.info().disk_hit) fail("{} {}: expected a disk-cache hit", row.device, name);
        row.disk.push_back(t.wall_ms);
        loaded = t.kernel;
    }
    // Memory cache: the same kernel again, nothing cleared (a hit returns the loaded kernel).
    for (int r = 0; r < repeats; ++r) {
        Timed t = timed_compile(d, make(1.0f));
        if (t.kernel != loaded) fail("{} {}: expected a memory-cache hit", row.device, name);
        row.memory.push_back(t.wall_ms);
    }
    return row;
}

int run(int argc, char** argv) {
    bench::Flags flags(argc, argv, {"--device", "--repeats", "--json"},
                       "compile_latency [--device D] [--repeats R (default 3)] [--json FILE]");
    const int repeats = static_cast<int>(flags.integer("--repeats", 3, 1, 100));

    // A fresh cache before anything compiles, so first compiles are real.
    std::string dir_template =
        (std::filesystem::temp_directory_path() / "kiln-compile-latency-XXXXXX").string();
    if (!mkdtemp(dir_template.data())) fail("cannot create a temporary cache directory");
    const std::filesystem::path cache_dir = dir_template;
    setenv("KILN_CACHE_DIR", cache_dir.c_str(), 1);

    std::vector<Row> rows;
    try {
        for (Device* d : bench::selected_devices(flags)) {
            rows.push_back(measure(*d, "elementwise", elementwise_kernel, repeats));
            rows.push_back(measure(*d, "fold", fold_kernel, repeats));
        }
    } catch (...) {
        std::filesystem::remove_all(cache_dir);
        throw;
    }
    std::filesystem::remove_all(cache_dir);

    std::vector<std::vector<std::string>> table;
    std::string json = fmt::format(
        "{{\"benchmark\": \"compile_latency\", \"repeats\": {}, \"results\": [", repeats);
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        auto ms = [](const std::vector<double>& v) {
            return fmt::format("{:.1f}", bench::median(v));
        };
        table.push_back({r.device, r.kernel, ms(r.first), ms(r.codegen), ms(r.compiler), ms(r.load),
                         ms(r.disk), fmt::format("{:.3f}", bench::median(r.memory))});
        json += fmt::format(
            "{}\n  {{\"device\": {}, \"kernel\": {}, \"first_compile_ms\": {:.6g}, "
            "\"codegen_ms\": {:.6g}, \"compiler_ms\": {:.6g}, \"load_ms\": {:.6g}, "
            "\"disk_hit_ms\": {:.6g}, \"memory_hit_ms\": {:.6g}, \"first_compile_all_ms\": {}, "
            "\"disk_hit_all_ms\": {}}}",
            i ? "," : "", bench::json_quote(r.device), bench::json_quote(r.kernel),
            bench::median(r.first), bench::median(r.codegen), bench::median(r.compiler),
            bench::median(r.load), bench::median(r.disk), bench::median(r.memory),
            bench::json_list(r.first), bench::json_list(r.disk));
    }
    json += "\n]}\n";
    fmt::print("compile latency, median of {} (ms; first compile = wall time of compile())\n",
               repeats);
    bench::print_table({"device", "kernel", "first compile", "codegen", "compiler", "load",
                        "disk hit", "memory hit"},
                       table);
    if (flags.has("--json")) bench::write_file(flags.text("--json"), json);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        fmt::print(stderr, "compile_latency: error: {}\n", e.what());
        return 2;
    }
}
