// The matmul benchmark: C = A·B (square, n³; inputs f32, f16 or bf16, C f32) for every schedule
// point of ops::matmul's class on each device, beside OpenBLAS's cblas_sgemm on the CPU (f32)
// when libopenblas is installed (loaded at run time). kiln's figures are the median of
// device-side timings (kiln::time_dispatches, the tuner's protocol); OpenBLAS's the median of
// wall-clock times of one call. GFLOP/s = 2n³ / time. Every point's output is compared bitwise
// with the first point's (either class: all equal on one device). --class tensor_core runs the
// tensor-core points where the device has tensor cores (the exact ones elsewhere).
//
//   bench_matmul [--device D] [--sizes 256,1024] [--dtype f32|f16|bf16]
//                [--class exact|tensor_core] [--iters N] [--points p1,p2] [--json FILE]
#include <chrono>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/semantics.hpp"
#include "ops/matmul/matmul.hpp"
#include "peers/openblas.hpp"

namespace kiln::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
    std::string device, who;
    int64_t n;
    double ms, gflops;
    std::string bits;
};

double gflops(int64_t n, double ms) {
    return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
           (ms * 1e6);
}

int run(int argc, char** argv) {
    const Flags flags(
        argc, argv, {"--device", "--sizes", "--dtype", "--class", "--iters", "--points", "--json"},
        "bench_matmul [--device D] [--sizes 256,1024] [--dtype f32|f16|bf16] "
        "[--class exact|tensor_core] [--iters N] [--points p1,p2] [--json FILE]");
    const DType input = parse_dtype(flags.text("--dtype", "f32"));
    if (!is_float(input)) fail("--dtype: '{}'; expected f32, f16 or bf16", name(input));
    const std::string class_name = flags.text("--class", "exact");
    if (class_name != "exact" && class_name != "tensor_core")
        fail("--class: '{}'; expected exact or tensor_core", class_name);
    const auto cls =
        class_name == "exact" ? ops::MatmulClass::exact : ops::MatmulClass::tensor_core;
    ops::check_class(cls, input);
    std::vector<int64_t> sizes;
    for (const auto& s : split_list(flags.text("--sizes", "256,1024"))) {
        const int64_t n = std::strtoll(s.c_str(), nullptr, 10);
        if (n < 1 || n > 16384) fail("--sizes: '{}' is not a size from 1 to 16384", s);
        sizes.push_back(n);
    }
    const int iters = static_cast<int>(flags.integer("--iters", 10, 2, 1000));
    // The points to run on a device: --points, else the class's domain there.
    auto points_on = [&](const Device& d) {
        std::vector<const ops::MatmulSchedule*> points;
        if (flags.has("--points"))
            for (const auto& name : split_list(flags.text("--points")))
                points.push_back(&ops::matmul_variant(name));
        else
            for (const auto& s : ops::matmul_domain(d, cls)) points.push_back(&s);
        return points;
    };
    const CblasSgemm sgemm = openblas_sgemm();
    std::vector<Row> rows;
    for (int64_t n : sizes) {
        const size_t cells = static_cast<size_t>(n * n);
        const std::vector<float> a = random_floats(cells, 1, 1.0f),
                                 b = random_floats(cells, 2, 1.0f);
        const ops::MatmulShape shape{1, n, n, n};
        for (Device* d : selected_devices(flags)) {
            Buffer ab(*d, input, cells), bb(*d, input, cells);
            ab.upload_bytes(semantics::encode_floats(input, a));
            bb.upload_bytes(semantics::encode_floats(input, b));
            std::vector<uint8_t> first;
            for (const ops::MatmulSchedule* p : points_on(*d)) {
                const auto r = ops::matmul_bench(*d, ab, {}, bb, {}, shape, DType::f32, *p, iters);
                const std::vector<uint8_t> out = r.output.download_bytes();
                if (first.empty()) first = out;
                rows.push_back({d->info().id, p->name, n, r.ms, gflops(n, r.ms),
                                out == first ? "same" : "DIFFER"});
                fmt::print(stderr, "{} n={} {}: {:.3f} ms\n", d->info().id, n, p->name, r.ms);
            }
            if (d->info().backend != Backend::cpu || !sgemm || input != DType::f32) continue;
            std::vector<float> c(cells);
            std::vector<double> ms;
            for (int i = 0; i < iters + 2; ++i) {
                const auto t0 = Clock::now();
                const int side = static_cast<int>(n);
                sgemm_row_major(sgemm, side, side, side, a.data(), b.data(), c.data());
                if (i >= 2)
                    ms.push_back(
                        std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            }
            const double med = median(ms);
            rows.push_back({d->info().id, fmt::format("openblas sgemm ({})", openblas_core()), n,
                            med, gflops(n, med), "-"});
        }
    }
    std::vector<std::vector<std::string>> table;
    for (const Row& r : rows)
        table.push_back({r.device, fmt::format("{}", r.n), r.who, fmt::format("{:.3f}", r.ms),
                         fmt::format("{:.1f}", r.gflops), r.bits});
    print_table({"device", "n", "kernel", "median ms", "GFLOP/s", "bits vs first point"}, table);
    if (!sgemm) fmt::print("(OpenBLAS not loadable: install libopenblas0 for the CPU peer)\n");
    if (flags.has("--json")) {
        std::vector<std::string> objects;
        for (const Row& r : rows)
            objects.push_back(fmt::format(
                "{{\"device\": {}, \"dtype\": {}, \"class\": {}, \"n\": {}, \"kernel\": {}, "
                "\"ms\": {:.6g}, \"gflops\": {:.6g}, \"bits\": {}}}",
                json_quote(r.device), json_quote(std::string(name(input))), json_quote(class_name),
                r.n, json_quote(r.who), r.ms, r.gflops, json_quote(r.bits)));
        write_json_array(flags.text("--json"), objects);
    }
    return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_matmul", kiln::bench::run, argc, argv);
}
