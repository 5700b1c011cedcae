// The attention benchmark: every schedule point of ops::attention on each device for the
// figures' cases (causal 1x8x256x64 f32 and causal 4x32x2048x128 bf16, O in the inputs' dtype)
// or the --cases given. Figures are the median of device-side timings (kiln::time_dispatches, the
// tuner's protocol); GFLOP/s = 4 * batch * heads * head_dim * (query-key pairs not masked) / time.
// Every point's output is compared bitwise with the first point's (each class: all equal) and, for
// exact-class cases small enough to run it here, with the oracle on the host. --class
// tensor_core runs the tensor-core class's points (f16/bf16 cases, devices with tensor cores). A
// CPU or other non-GPU device skips cases past 20 GFLOP unless --device names it.
//
//   bench_attention [--device D] [--cases BxHxSxD[:f32|f16|bf16][:causal],...] [--iters N]
//                   [--points p1,p2] [--class exact|tensor_core] [--json FILE]
// A case may give seq_q and seq_k apart as BxHxSQxSKxD.
#include <cstring>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/semantics.hpp"
#include "ops/attention/attention.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/attention.hpp"

namespace kiln::bench {
namespace {

constexpr const char* kDefaultCases = "1x8x256x64:f32:causal,4x32x2048x128:bf16:causal";
// The largest case, in fmas, checked against the oracle on the host.
constexpr double kOracleFmas = 2e8;
// The most work a non-GPU device is given unless --device names it.
constexpr double kHostGflop = 20;

struct Case {
    std::string text;
    ops::AttentionShape shape;
    DType dtype = DType::f32;
    bool causal = false;
};

Case parse_case(const std::string& text) {
    Case c{text};
    std::vector<std::string> parts;
    std::string rest = text;
    for (size_t at; (at = rest.find(':')) != std::string::npos; rest = rest.substr(at + 1))
        parts.push_back(rest.substr(0, at));
    parts.push_back(rest);
    std::vector<int64_t> sizes;
    std::string dims = parts[0];
    for (size_t at = 0; at <= dims.size();) {
        const size_t x = std::min(dims.find('x', at), dims.size());
        char* end = nullptr;
        const std::string item = dims.substr(at, x - at);
        sizes.push_back(std::strtoll(item.c_str(), &end, 10));
        if (item.empty() || *end != '\0' || sizes.back() < 1)
            fail("--cases: '{}': '{}' is not a size >= 1", text, item);
        at = x + 1;
    }
    if (sizes.size() != 4 && sizes.size() != 5)
        fail("--cases: '{}': expected BxHxSxD or BxHxSQxSKxD", text);
    const bool apart = sizes.size() == 5;
    c.shape = {sizes[0], sizes[1], 0, sizes[2], sizes[apart ? 3 : 2], sizes[apart ? 4 : 3]};
    for (size_t i = 1; i < parts.size(); ++i) {
        if (parts[i] == "causal")
            c.causal = true;
        else if (parts[i] == "f32" || parts[i] == "f16" || parts[i] == "bf16")
            c.dtype = parts[i] == "f32" ? DType::f32 : parts[i] == "f16" ? DType::f16 : DType::bf16;
        else
            fail("--cases: '{}': '{}' is neither a dtype (f32, f16, bf16) nor 'causal'", text,
                 parts[i]);
    }
    return c;
}

// Query-key pairs not masked, per (batch, head).
double pairs(const Case& c) {
    const auto& s = c.shape;
    if (!c.causal) return static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k);
    const double first = static_cast<double>(s.seq_k - s.seq_q + 1);  // keys row 0 sees
    return static_cast<double>(s.seq_q) * (2 * first + static_cast<double>(s.seq_q - 1)) / 2;
}

double fmas(const Case& c) {
    return 2.0 * static_cast<double>(c.shape.batch * c.shape.heads * c.shape.head_dim) * pairs(c);
}

// n values of `t` drawn uniformly from [-1, 1], as element bytes.
std::vector<uint8_t> random_bytes(DType t, size_t n, uint64_t seed) {
    const std::vector<float> v = random_floats(n, seed, 1.0f);
    std::vector<uint8_t> bytes(n * size_of(t));
    for (size_t i = 0; i < n; ++i) {
        if (t == DType::f32) {
            std::memcpy(bytes.data() + 4 * i, &v[i], 4);
            continue;
        }
        const uint16_t h =
            t == DType::f16 ? semantics::f32_to_f16(v[i]) : semantics::f32_to_bf16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    return bytes;
}

struct Row {
    std::string device, what, kernel;
    double ms, gflops;
    std::string bits, oracle;
};

int run(int argc, char** argv) {
    const Flags flags(argc, argv,
                      {"--device", "--cases", "--iters", "--points", "--class", "--json"},
                      "bench_attention [--device D] [--cases BxHxSxD[:f32|f16|bf16][:causal],...] "
                      "[--iters N] [--points p1,p2] [--class exact|tensor_core] [--json FILE]");
    const std::string class_name = flags.text("--class", "exact");
    if (class_name != "exact" && class_name != "tensor_core")
        fail("--class {}: expected exact or tensor_core", class_name);
    const MatmulClass cls =
        class_name == "tensor_core" ? MatmulClass::tensor_core : MatmulClass::exact;
    std::vector<Case> cases;
    for (const auto& text : split_list(flags.text("--cases", kDefaultCases)))
        cases.push_back(parse_case(text));
    const int iters = static_cast<int>(flags.integer("--iters", 10, 2, 1000));
    std::vector<const ops::AttentionSchedule*> points;
    if (flags.has("--points"))
        for (const auto& name : split_list(flags.text("--points")))
            points.push_back(&ops::attention_variant(name));
    else
        for (const auto& s : cls == MatmulClass::tensor_core ? ops::attention_tensor_core_variants()
                                                             : ops::attention_variants())
            points.push_back(&s);
    std::vector<Row> rows;
    for (const Case& c : cases) {
        const auto& s = c.shape;
        const size_t q_count = static_cast<size_t>(s.batch * s.heads * s.seq_q * s.head_dim);
        const size_t kv_count = static_cast<size_t>(s.batch * s.heads * s.seq_k * s.head_dim);
        const std::vector<uint8_t> q = random_bytes(c.dtype, q_count, 1),
                                   k = random_bytes(c.dtype, kv_count, 2),
                                   v = random_bytes(c.dtype, kv_count, 3);
        const ops::AttentionOptions options{c.causal, std::nullopt, c.dtype, cls};
        std::vector<uint8_t> want;
        if (fmas(c) <= kOracleFmas && cls == MatmulClass::exact)
            want = oracle::attention(c.dtype, c.dtype, q, k, v, s, c.causal,
                                     ops::attention_scale(s, options));
        const std::string what = fmt::format("{} {}{}", c.text.substr(0, c.text.find(':')),
                                             name(c.dtype), c.causal ? " causal" : "");
        for (Device* d : selected_devices(flags)) {
            if (!flags.has("--device") && !is_gpu(d->info()) && 2 * fmas(c) / 1e9 > kHostGflop) {
                fmt::print(stderr, "{} {}: skipped ({:.0f} GFLOP; --device {} runs it)\n",
                           d->info().id, what, 2 * fmas(c) / 1e9, d->info().id);
                continue;
            }
            Buffer qb(*d, c.dtype, q_count), kb(*d, c.dtype, kv_count), vb(*d, c.dtype, kv_count);
            qb.upload_bytes(q);
            kb.upload_bytes(k);
            vb.upload_bytes(v);
            std::vector<uint8_t> first;
            for (const ops::AttentionSchedule* p : points) {
                if (p->tensor_core() && !d->info().tensor_cores) {
                    fmt::print(stderr, "{} {} {}: skipped (no tensor cores)\n", d->info().id, what,
                               p->name);
                    continue;
                }
                const auto r = ops::attention_bench(*d, qb, kb, vb, s, options, *p, iters);
                const std::vector<uint8_t> out = r.output.download_bytes();
                if (first.empty()) first = out;
                rows.push_back({d->info().id, what, p->name, r.ms, 2 * fmas(c) / (r.ms * 1e6),
                                out == first ? "same" : "DIFFER",
                                want.empty() ? "-" : (out == want ? "same" : "DIFFER")});
                fmt::print(stderr, "{} {} {}: {:.4f} ms\n", d->info().id, what, p->name, r.ms);
            }
        }
    }
    std::vector<std::vector<std::string>> table;
    for (const Row& r : rows)
        table.push_back({r.device, r.what, r.kernel, fmt::format("{:.4f}", r.ms),
                         fmt::format("{:.1f}", r.gflops), r.bits, r.oracle});
    print_table({"device", "case", "kernel", "median ms", "GFLOP/s", "bits vs first point",
                 "bits vs oracle"},
                table);
    if (flags.has("--json")) {
        std::vector<std::string> objects;
        for (const Row& r : rows)
            objects.push_back(fmt::format(
                "{{\"device\": {}, \"case\": {}, \"kernel\": {}, \"ms\": {:.6g}, \"gflops\": "
                "{:.6g}, \"bits\": {}, \"oracle\": {}}}",
                json_quote(r.device), json_quote(r.what), json_quote(r.kernel), r.ms, r.gflops,
                json_quote(r.bits), json_quote(r.oracle)));
        write_json_array(flags.text("--json"), objects);
    }
    return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_attention", kiln::bench::run, argc, argv);
}
