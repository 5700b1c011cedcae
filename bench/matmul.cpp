// The matmul benchmark: C = A·B (square, n³, or m x k times k x n; inputs f32, f16 or bf16, C
// f32) for every schedule point of ops::matmul's class on each device, beside OpenBLAS's
// cblas_sgemm on the CPU (f32) when libopenblas is installed (loaded at run time). kiln's figures
// are the median of device-side timings (kiln::time_dispatches, the tuner's protocol); OpenBLAS's
// the median of wall-clock times of one call. GFLOP/s = 2mkn / time. Every point's output is
// compared bitwise with the first point's (either class: all equal on one device). --class
// tensor_core runs the tensor-core points where the device has tensor cores (the exact ones
// elsewhere).
//
//   bench_matmul [--device D] [--sizes 256,1024] [--shapes 1x384x1536,...] [--dtype f32|f16|bf16]
//                [--class exact|tensor_core] [--iters N] [--points p1,p2] [--json FILE]
// --shapes adds m x k x n products (a linear layer's: few rows, a long k) after the --sizes;
// with --shapes alone no square size runs.
#include <algorithm>
#include <chrono>
#include <sstream>

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
    ops::MatmulShape shape;
    double ms, gflops;
    std::string bits;
};

double gflops(const ops::MatmulShape& s, double ms) {
    return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n) /
           (ms * 1e6);
}

std::string shape_text(const ops::MatmulShape& s) {
    return s.m == s.k && s.k == s.n ? fmt::format("{}", s.n)
                                    : fmt::format("{}x{}x{}", s.m, s.k, s.n);
}

// "MxKxN" as a shape, each size from 1 to 16384.
ops::MatmulShape parse_shape(const std::string& text) {
    int64_t m = 0, k = 0, n = 0;
    char x1 = 0, x2 = 0;
    std::istringstream in(text);
    in >> m >> x1 >> k >> x2 >> n;
    if (!in || !in.eof() || x1 != 'x' || x2 != 'x' || std::min({m, k, n}) < 1 ||
        std::max({m, k, n}) > 16384)
        fail("--shapes: '{}'; expected MxKxN with each size from 1 to 16384", text);
    return {1, m, n, k};
}

int run(int argc, char** argv) {
    const Flags flags(
        argc, argv,
        {"--device", "--sizes", "--shapes", "--dtype", "--class", "--iters", "--points", "--json"},
        "bench_matmul [--device D] [--sizes 256,1024] [--shapes MxKxN,...] "
        "[--dtype f32|f16|bf16] [--class exact|tensor_core] [--iters N] "
        "[--points p1,p2] [--json FILE]");
    const DType input = parse_dtype(flags.text("--dtype", "f32"));
    if (!is_float(input)) fail("--dtype: '{}'; expected f32, f16 or bf16", name(input));
    const std::string class_name = flags.text("--class", "exact");
    if (class_name != "exact" && class_name != "tensor_core")
        fail("--class: '{}'; expected exact or tensor_core", class_name);
    const auto cls =
        class_name == "exact" ? ops::MatmulClass::exact : ops::MatmulClass::tensor_core;
    ops::check_class(cls, input);
    std::vector<ops::MatmulShape> shapes;
    if (flags.has("--sizes") || !flags.has("--shapes"))
        for (const auto& s : split_list(flags.text("--sizes", "256,1024"))) {
            const int64_t n = std::strtoll(s.c_str(), nullptr, 10);
            if (n < 1 || n > 16384) fail("--sizes: '{}' is not a size from 1 to 16384", s);
            shapes.push_back({1, n, n, n});
        }
    if (flags.has("--shapes"))
        for (const auto& s : split_list(flags.text("--shapes"))) shapes.push_back(parse_shape(s));
    const int iters = static_cast<int>(flags.integer("--iters", 10, 2, 1000));
    // The points to run on a device for a shape: --points, else those the op's entry races.
    auto points_on = [&](const Device& d, const ops::MatmulShape& shape) {
        std::vector<ops::MatmulSchedule> points;
        if (flags.has("--points"))
            for (const auto& name : split_list(flags.text("--points")))
                points.push_back(ops::matmul_variant(name));
        else
            points = ops::matmul_points_for(d, cls, shape);
        return points;
    };
    const CblasSgemm sgemm = openblas_sgemm();
    std::vector<Row> rows;
    for (const ops::MatmulShape& shape : shapes) {
        const size_t a_cells = static_cast<size_t>(shape.m * shape.k),
                     b_cells = static_cast<size_t>(shape.k * shape.n);
        const std::vector<float> a = random_floats(a_cells, 1, 1.0f),
                                 b = random_floats(b_cells, 2, 1.0f);
        for (Device* d : selected_devices(flags)) {
            Buffer ab(*d, input, a_cells), bb(*d, input, b_cells);
            ab.upload_bytes(semantics::encode_floats(input, a));
            bb.upload_bytes(semantics::encode_floats(input, b));
            std::vector<uint8_t> first;
            for (const ops::MatmulSchedule& p : points_on(*d, shape)) {
                const auto r = ops::matmul_bench(*d, ab, {}, bb, {}, shape, DType::f32, p, iters);
                const std::vector<uint8_t> out = r.output.download_bytes();
                if (first.empty()) first = out;
                rows.push_back({d->info().id, p.name, shape, r.ms, gflops(shape, r.ms),
                                out == first ? "same" : "DIFFER"});
                fmt::print(stderr, "{} {} {}: {:.3f} ms\n", d->info().id, shape_text(shape), p.name,
                           r.ms);
            }
            if (d->info().backend != Backend::cpu || !sgemm || input != DType::f32) continue;
            std::vector<float> c(static_cast<size_t>(shape.m * shape.n));
            std::vector<double> ms;
            for (int i = 0; i < iters + 2; ++i) {
                const auto t0 = Clock::now();
                sgemm_row_major(sgemm, static_cast<int>(shape.m), static_cast<int>(shape.n),
                                static_cast<int>(shape.k), a.data(), b.data(), c.data());
                if (i >= 2)
                    ms.push_back(
                        std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            }
            const double med = median(ms);
            rows.push_back({d->info().id, fmt::format("openblas sgemm ({})", openblas_core()),
                            shape, med, gflops(shape, med), "-"});
        }
    }
    std::vector<std::vector<std::string>> table;
    for (const Row& r : rows)
        table.push_back({r.device, shape_text(r.shape), r.who, fmt::format("{:.3f}", r.ms),
                         fmt::format("{:.1f}", r.gflops), r.bits});
    print_table(
        {"device", "n or m x k x n", "kernel", "median ms", "GFLOP/s", "bits vs first point"},
        table);
    if (!sgemm) fmt::print("(OpenBLAS not loadable: install libopenblas0 for the CPU peer)\n");
    if (flags.has("--json")) {
        std::vector<std::string> objects;
        for (const Row& r : rows)
            objects.push_back(fmt::format(
                "{{\"device\": {}, \"dtype\": {}, \"class\": {}, \"m\": {}, \"k\": {}, "
                "\"n\": {}, \"kernel\": {}, \"ms\": {:.6g}, \"gflops\": {:.6g}, \"bits\": {}}}",
                json_quote(r.device), json_quote(std::string(name(input))), json_quote(class_name),
                r.shape.m, r.shape.k, r.shape.n, json_quote(r.who), r.ms, r.gflops,
                json_quote(r.bits)));
        write_json_array(flags.text("--json"), objects);
    }
    return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_matmul", kiln::bench::run, argc, argv);
}
