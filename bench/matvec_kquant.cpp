// The Q4_K / Q6_K matvec benchmark: every variant of ops::matvec_kquant on each device, for
// Gemma 3 270M's ffn_down shape (640 rows x k 2048, its weights in cache on a CPU) and a
// 4096 x 4096 matrix (W far larger than the caches), with matvec_q8 at the same shape for scale
// (its first variant b64_v1 and its CPU points, the cpu_rows form).
// Figures are the median of device-side timings (kiln::time_dispatches, the tuner's protocol);
// GB/s = W's bytes / time (x and y are a few KB). Every variant's y is compared bitwise with the
// first variant's.
//
//   bench_matvec_kquant [--device D] [--iters N] [--json FILE]
#include <cstring>
#include <random>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/ops/matvec_kquant.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/semantics.hpp"

namespace kiln::bench {
namespace {

struct Shape {
    const char* name;
    int64_t rows, k;
};
const Shape kShapes[] = {{"gemma_ffn_down", 640, 2048}, {"4096x4096", 4096, 4096}};

// Random blocks of `format` with sane f16 scales (0.001 .. 0.03: no NaN, no subnormal).
std::vector<uint8_t> random_blocks(ops::KQuant format, int64_t rows, int64_t k, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> out(static_cast<size_t>(ops::kquant_bytes(format, rows, k)));
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    const int bytes = format == ops::KQuant::q4_k ? ops::kQ4KBlockBytes : ops::kQ6KBlockBytes;
    std::uniform_real_distribution<float> scale(0.001f, 0.03f);
    for (size_t at = 0; at < out.size(); at += static_cast<size_t>(bytes))
        for (int offset : format == ops::KQuant::q4_k ? std::vector<int>{0, 2} : std::vector{208}) {
            const uint16_t h = semantics::f32_to_f16(scale(rng));
            std::memcpy(out.data() + at + static_cast<size_t>(offset), &h, 2);
        }
    return out;
}

struct Row {
    std::string device, shape, op, variant;
    double ms, gbps;
    std::string bits;
};

Buffer upload(Device& d, const std::vector<uint8_t>& bytes) {
    Buffer b(d, DType::u8, bytes.size());
    b.upload_bytes(bytes);
    return b;
}

int run(int argc, char** argv) {
    const std::string usage = "bench_matvec_kquant [--device D] [--iters N] [--json FILE]";
    const Flags flags(argc, argv, {"--device", "--iters", "--json"}, usage);
    const int iters = static_cast<int>(flags.integer("--iters", TUNE_ITERS, 2, 10000));
    std::vector<Row> rows;
    for (const Shape& s : kShapes) {
        const std::vector<uint8_t> x =
            ops::quantize_q8_0(random_floats(static_cast<size_t>(s.k), 1, 1.0f));
        const std::vector<uint8_t> w8 =
            ops::quantize_q8_0(random_floats(static_cast<size_t>(s.rows * s.k), 2, 1.0f));
        for (Device* d : selected_devices(flags)) {
            const Buffer xb = upload(*d, x);
            for (ops::KQuant f : {ops::KQuant::q4_k, ops::KQuant::q6_k}) {
                const std::vector<uint8_t> w = random_blocks(f, s.rows, s.k, 3);
                const Buffer wb = upload(*d, w);
                const std::string op = fmt::format("matvec_{}", ops::kquant_name(f));
                std::vector<uint8_t> first;
                for (const auto& v : ops::matvec_kquant_variants()) {
                    const auto r =
                        ops::matvec_kquant_bench(*d, f, wb, xb, s.rows, s.k, v.schedule, iters);
                    const std::vector<uint8_t> out = r.output.download_bytes();
                    if (first.empty()) first = out;
                    rows.push_back({d->info().id, s.name, op, v.name, r.ms,
                                    static_cast<double>(w.size()) / (r.ms * 1e6),
                                    out == first ? "same" : "DIFFER"});
                    fmt::print(stderr, "{} {} {} {}: {:.4f} ms\n", d->info().id, s.name, op, v.name,
                               r.ms);
                }
            }
            const Buffer w8b = upload(*d, w8);
            for (const auto& v : ops::matvec_q8_variants()) {
                const std::string_view n = v.name;
                if (n != "b64_v1" && v.schedule.form != ops::MatvecForm::cpu_rows) continue;
                const auto r = ops::matvec_q8_bench(*d, w8b, xb, s.rows, s.k, v.schedule, iters);
                rows.push_back({d->info().id, s.name, "matvec_q8", v.name, r.ms,
                                static_cast<double>(w8.size()) / (r.ms * 1e6), "-"});
            }
        }
    }
    std::vector<std::vector<std::string>> table;
    for (const Row& r : rows)
        table.push_back({r.device, r.shape, r.op, r.variant, fmt::format("{:.2f}", r.ms * 1e3),
                         fmt::format("{:.2f}", r.gbps), r.bits});
    print_table({"device", "shape", "op", "variant", "median us", "W GB/s", "bits vs first"},
                table);
    if (flags.has("--json")) {
        std::vector<std::string> objects;
        for (const Row& r : rows)
            objects.push_back(fmt::format(
                "{{\"device\": {}, \"shape\": {}, \"op\": {}, \"variant\": {}, \"us\": {:.6g}, "
                "\"gbps\": {:.6g}, \"bits\": {}}}",
                json_quote(r.device), json_quote(r.shape), json_quote(r.op), json_quote(r.variant),
                r.ms * 1e3, r.gbps, json_quote(r.bits)));
        write_json_array(flags.text("--json"), objects);
    }
    return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_matvec_kquant", kiln::bench::run, argc, argv);
}
