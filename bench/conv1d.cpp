// The conv1d benchmark: every schedule point of ops::conv1d on each device for two cases, named
// as shared/peers/torch_peers.py names cuDNN's (so the two join): `tiny`, 1x8x1024 -> 16
// channels, kernel 5, padding 2, and `big`, 16x256x4096 -> 256 channels, kernel 3, padding 1;
// `mid`, big's channels and kernel over one batch of 1024 (1/64 of its work, for a CPU); and
// `large`, 4x64x2048 -> 64 channels, kernel 3, padding 1 (`kiln bench`'s conv1d_large).
// Figures are the median of device-side timings (kiln::time_dispatches, the tuner's protocol: the
// L2 flushed before each timed launch on GPUs); GFLOP/s = 2 * batch * out_channels * l_out *
// in_channels/groups * kernel / time. Every point's output is compared bitwise with the first
// point's (each class: all equal). --class tensor_core runs the tensor-core class's points
// (f16/bf16, devices with tensor cores).
//
//   bench_conv1d [--device D] [--cases tiny,mid,large,big] [--dtype f32|f16|bf16] [--iters N]
//                [--points p1,p2] [--class exact|tensor_core] [--json FILE]
#include <cstring>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/semantics.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"

namespace kiln::bench {
namespace {

struct Case {
    const char* name;
    ops::Conv1dShape shape;
};

const Case kCases[] = {
    {"tiny", {1, 8, 1024, 16, 5, {1, 2, 1, 1}}},
    {"big", {16, 256, 4096, 256, 3, {1, 1, 1, 1}}},
    {"mid", {1, 256, 1024, 256, 3, {1, 1, 1, 1}}},
    {"large", {4, 64, 2048, 64, 3, {1, 1, 1, 1}}},
};

const Case& find_case(const std::string& name) {
    for (const Case& c : kCases)
        if (name == c.name) return c;
    fail("--cases: no case named '{}'; expected tiny, mid, large or big", name);
}

// The case's name in the torch peers' JSON: conv1d_f32_16x256x4096_co256_k3.
std::string peer_name(const ops::Conv1dShape& s, DType t) {
    return fmt::format("conv1d_{}_{}x{}x{}_co{}_k{}", name(t), s.batch, s.in_channels, s.length,
                       s.out_channels, s.kernel);
}

double flops(const ops::Conv1dShape& s) {
    return 2.0 * static_cast<double>(s.batch * s.out_channels * s.out_length()) *
           static_cast<double>(s.in_channels / s.params.groups * s.kernel);
}

// n random values in [-1, 1] as raw bytes of `t`.
std::vector<uint8_t> random_bytes(size_t n, uint64_t seed, DType t) {
    const std::vector<float> f = random_floats(n, seed, 1.0f);
    std::vector<uint8_t> out(n * size_of(t));
    for (size_t i = 0; i < n; ++i) {
        if (t == DType::f32) {
            std::memcpy(out.data() + 4 * i, &f[i], 4);
            continue;
        }
        const uint16_t h =
            t == DType::f16 ? semantics::f32_to_f16(f[i]) : semantics::f32_to_bf16(f[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
}

struct Row {
    std::string device, case_name, point;
    double ms, gflops;
    std::string bits;
};

int run(int argc, char** argv) {
    const std::string usage =
        "bench_conv1d [--device D] [--cases tiny,mid,large,big] [--dtype f32|f16|bf16] [--iters N] "
        "[--points p1,p2] [--class exact|tensor_core] [--json FILE]";
    const Flags flags(
        argc, argv, {"--device", "--cases", "--dtype", "--iters", "--points", "--class", "--json"},
        usage);
    const std::string class_name = flags.text("--class", "exact");
    if (class_name != "exact" && class_name != "tensor_core")
        fail("--class {}: expected exact or tensor_core", class_name);
    const bool tensor_core = class_name == "tensor_core";
    std::vector<const Case*> cases;
    for (const auto& c : split_list(flags.text("--cases", "tiny,big")))
        cases.push_back(&find_case(c));
    const std::string dtype = flags.text("--dtype", "f32");
    if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
        fail("--dtype '{}'; expected f32, f16 or bf16; usage: {}", dtype, usage);
    const DType t = dtype == "f32" ? DType::f32 : (dtype == "f16" ? DType::f16 : DType::bf16);
    const int iters = static_cast<int>(flags.integer("--iters", 10, 2, 1000));
    std::vector<const ops::Conv1dSchedule*> points;
    if (flags.has("--points"))
        for (const auto& n : split_list(flags.text("--points")))
            points.push_back(&ops::conv1d_variant(n));
    else
        for (const auto& s :
             tensor_core ? ops::conv1d_tensor_core_variants() : ops::conv1d_variants())
            points.push_back(&s);
    std::vector<Row> rows;
    for (const Case* c : cases) {
        const ops::Conv1dShape& s = c->shape;
        const size_t x_count = static_cast<size_t>(s.batch * s.in_channels * s.length);
        const size_t w_count = static_cast<size_t>(s.out_channels * s.in_channels * s.kernel);
        const std::vector<uint8_t> x = random_bytes(x_count, 1, t), w = random_bytes(w_count, 2, t);
        for (Device* d : selected_devices(flags)) {
            Buffer xb(*d, t, x_count), wb(*d, t, w_count);
            xb.upload_bytes(x);
            wb.upload_bytes(w);
            std::vector<uint8_t> first;
            for (const ops::Conv1dSchedule* p : points) {
                if (p->tensor_core() && !d->info().tensor_cores) continue;
                const auto r = ops::conv1d_bench(*d, xb, {}, wb, s, DType::f32, *p, iters);
                const std::vector<uint8_t> out = r.output.download_bytes();
                if (first.empty()) first = out;
                rows.push_back({d->info().id, peer_name(s, t), p->name, r.ms,
                                flops(s) / (r.ms * 1e6), out == first ? "same" : "DIFFER"});
                fmt::print(stderr, "{} {} {}: {:.4f} ms\n", d->info().id, c->name, p->name, r.ms);
            }
        }
    }
    std::vector<std::vector<std::string>> table;
    for (const Row& r : rows)
        table.push_back({r.device, r.case_name, r.point, fmt::format("{:.2f}", r.ms * 1e3),
                         fmt::format("{:.1f}", r.gflops), r.bits});
    print_table({"device", "case", "point", "median us", "GFLOP/s", "bits vs first point"}, table);
    if (flags.has("--json")) {
        std::vector<std::string> objects;
        for (const Row& r : rows)
            objects.push_back(
                fmt::format("{{\"device\": {}, \"case\": {}, \"point\": {}, \"us\": {:.6g}, "
                            "\"gflops\": {:.6g}, \"bits\": {}}}",
                            json_quote(r.device), json_quote(r.case_name), json_quote(r.point),
                            r.ms * 1e3, r.gflops, json_quote(r.bits)));
        write_json_array(flags.text("--json"), objects);
    }
    return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_conv1d", kiln::bench::run, argc, argv);
}
