// `kiln tune rms_norm|matvec_q8|matmul|conv1d|attention`: tunes one shipped op for one shape on
// one device with random inputs, showing progress, then a table of the variants' medians with the
// winner marked (or, with --json, one object). A cached decision is reported as a hit, with nothing
// benched.
#include <cstdint>
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "base/checked_mul.hpp"
#include "cli_common.hpp"
#include "json.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "kiln/semantics.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "runtime/cpu/host_info.hpp"
#include "table.hpp"

namespace kiln::cli {
namespace {

struct TuneOptions {
    // Shape options: each >= 1 but padding >= 0 (add_number_option).
    int64_t rows = 1, n = 4096, k = 4096, m = 1, batch = 1;
    int64_t heads = 1, seq = 1, dim = 64;                            // attention
    int64_t channels = 1, length = 1, out_channels = 1, kernel = 1;  // conv1d
    int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
    bool causal = false;
    std::string dtype = "f32";
    std::string device;
    bool json = false;
};

// Byte counts for the memory check: a sum or product beyond int64 counts as INT64_MAX.
int64_t saturating_mul(int64_t a, int64_t b) {
    return checked_mul(a, b).value_or(INT64_MAX);
}
int64_t saturating_add(int64_t a, int64_t b) {
    int64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

std::string gib(int64_t bytes) {
    return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
}

// Refuses, before anything is allocated, a shape whose random inputs (made on the host) and
// buffers (on the device; on the host too for the CPU backend) would not fit in memory.
void check_fits(const char* command, Device& d, int64_t host_bytes, int64_t device_bytes) {
    const int64_t host_memory = static_cast<int64_t>(runtime::cpu::physical_memory_bytes());
    const int64_t on_host =
        d.info().backend == Backend::cpu ? saturating_add(host_bytes, device_bytes) : host_bytes;
    if (host_memory > 0 && on_host > host_memory)
        fail("{}: the shape needs {} of host memory; this machine has {}", command, gib(on_host),
             gib(host_memory));
    const auto device_memory = static_cast<int64_t>(d.info().memory_bytes);
    if (device_memory > 0 && device_bytes > device_memory)
        fail("{}: the shape needs {} of memory on {}; it has {}", command, gib(device_bytes),
             d.info().id, gib(device_memory));
}

std::vector<float> random_values(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist;
    std::vector<float> v(count);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Uploads f32 values into a buffer of `dtype` (f16/bf16 rounded to nearest even).
Buffer upload_as(Device& d, DType dtype, const std::vector<float>& values) {
    Buffer b(d, dtype, values.size());
    if (dtype == DType::f32) {
        b.upload(values);
        return b;
    }
    std::vector<uint8_t> bytes(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == DType::f16 ? semantics::f32_to_f16(values[i])
                                               : semantics::f32_to_bf16(values[i]);
        std::memcpy(&bytes[2 * i], &h, 2);
    }
    b.upload_bytes(bytes);
    return b;
}

int report(Tuned<Buffer>& tuned, const TuneOptions& opt) {
    if (!opt.json)
        tuned.on_benched([](const std::string& name, double ms) {
            std::fprintf(stderr, "  benched %-16s %10.4f ms\n", name.c_str(), ms);
        });
    if (!opt.json) std::fprintf(stderr, "tuning %s ...\n", tuned.full_key().c_str());
    tuned.run(Tuner::process_default());
    const TuneReport& r = tuned.report();
    if (opt.json) {
        std::string variants;
        for (size_t i = 0; i < r.variant_ms.size(); ++i)
            variants += fmt::format("{}{{\"name\": {}, \"ms\": {:.6g}}}", i ? ", " : "",
                                    json_quote(r.variant_ms[i].first), r.variant_ms[i].second);
        fmt::print(
            "{{\"op\": {}, \"key\": {}, \"device\": {}, \"winner\": {}, \"benched\": {}, "
            "\"hit\": {}, \"cache_file\": {}, \"variants\": [{}]}}\n",
            json_quote(r.op), json_quote(r.key), json_quote(r.device_id), json_quote(r.winner),
            r.benched, r.hit ? "true" : "false", json_quote(r.cache_file.string()), variants);
        return 0;
    }
    fmt::print("op {}  key {}\ndevice {}\ncache {}\n", r.op, r.key, r.device_id,
               r.cache_file.empty() ? "(none: kept in memory only)" : r.cache_file.string());
    if (r.hit) {
        fmt::print("cached winner: {} (a hit: nothing benched, the winner ran once)\n", r.winner);
        return 0;
    }
    Table table({"variant", "median ms", ""});
    for (const auto& [name, ms] : r.variant_ms)
        table.add({name, fmt::format("{:.4f}", ms), name == r.winner ? "<- winner" : ""});
    table.print();
    fmt::print("{} variants benched{}\n", r.benched,
               r.retuned ? " (re-tuned: the cached winner is gone)" : "");
    return 0;
}

int tune_rms_norm(const TuneOptions& opt) {
    const char* command = "tune rms_norm";
    const int64_t rows = opt.rows, n = opt.n;
    const DType dtype = parse_dtype(opt.dtype);
    const int64_t elements = ops::rms_norm_check_shape(dtype, rows, n);
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    const auto size = static_cast<int64_t>(size_of(dtype));
    // Host: the f32 values (and their f16/bf16 bytes); device: x, w and the output.
    const int64_t values = saturating_add(elements, n);
    check_fits(command, d, saturating_mul(values, dtype == DType::f32 ? 4 : 6),
               saturating_mul(saturating_add(values, elements), size));
    Buffer x = upload_as(d, dtype, random_values(static_cast<size_t>(elements), 1));
    Buffer w = upload_as(d, dtype, random_values(static_cast<size_t>(n), 2));
    auto tuned = ops::rms_norm_tuned(d, x, w, n, 1e-6f);
    return report(tuned, opt);
}

int tune_matvec(const TuneOptions& opt) {
    const char* command = "tune matvec_q8";
    const int64_t rows = opt.rows, k = opt.k;
    const int64_t w_bytes = ops::matvec_q8_check_shape(rows, k);
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    // Host: W's f32 values and their Q8_0 bytes; device: W, x and y.
    check_fits(command, d, saturating_add(saturating_mul(saturating_mul(rows, k), 4), w_bytes),
               saturating_add(saturating_add(w_bytes, k), saturating_mul(rows, 4)));
    const auto wq = ops::quantize_q8_0(random_values(static_cast<size_t>(rows * k), 3));
    const auto xq = ops::quantize_q8_0(random_values(static_cast<size_t>(k), 4));
    Buffer w(d, DType::u8, wq.size()), x(d, DType::u8, xq.size());
    w.upload(wq);
    x.upload(xq);
    auto tuned = ops::matvec_q8_tuned(d, w, x, rows, k);
    return report(tuned, opt);
}

// The element count of an operand of the given sizes (each >= 1), refused where kiln's kernels
// could not index it (32-bit indices).
int64_t operand_elements(const char* command, const char* operand,
                         std::initializer_list<int64_t> sizes) {
    int64_t count = 1;
    for (int64_t s : sizes) count = saturating_mul(count, s);
    if (count > INT32_MAX)
        fail("{}: {} would have {} elements; kiln's kernels index with 32 bits (at most {})",
             command, operand, count, INT32_MAX);
    return count;
}

// Random inputs of `dtype` for operands of these element counts, checked to fit first (the
// host holds their f32 values and f16/bf16 bytes; the device holds them and an f32 output).
std::vector<Buffer> random_inputs(const char* command, Device& d, DType dtype,
                                  std::initializer_list<int64_t> counts, int64_t output) {
    int64_t total = 0;
    for (int64_t c : counts) total = saturating_add(total, c);
    check_fits(command, d, saturating_mul(total, dtype == DType::f32 ? 4 : 6),
               saturating_add(saturating_mul(total, static_cast<int64_t>(size_of(dtype))),
                              saturating_mul(output, 4)));
    std::vector<Buffer> inputs;
    uint32_t seed = 5;
    for (int64_t c : counts)
        inputs.push_back(upload_as(d, dtype, random_values(static_cast<size_t>(c), seed++)));
    return inputs;
}

int tune_matmul(const TuneOptions& opt) {
    const char* command = "tune matmul";
    const int64_t batch = opt.batch, m = opt.m, n = opt.n, k = opt.k;
    const int64_t a = operand_elements(command, "a (batch x m x k)", {batch, m, k});
    const int64_t b = operand_elements(command, "b (batch x k x n)", {batch, k, n});
    const int64_t c = operand_elements(command, "c (batch x m x n)", {batch, m, n});
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    const auto in = random_inputs(command, d, parse_dtype(opt.dtype), {a, b}, c);
    auto tuned = ops::matmul_tuned(d, in[0], {}, in[1], {}, {batch, m, n, k}, DType::f32);
    return report(tuned, opt);
}

int tune_conv1d(const TuneOptions& opt) {
    const char* command = "tune conv1d";
    ops::Conv1dShape s;
    s.batch = opt.batch;
    s.in_channels = opt.channels;
    s.length = opt.length;
    s.out_channels = opt.out_channels;
    s.kernel = opt.kernel;
    s.params = {opt.stride, opt.padding, opt.dilation, opt.groups};
    if (s.in_channels % s.params.groups != 0)
        fail("{}: --channels {} --groups {}; expected the channels a multiple of the groups",
             command, s.in_channels, s.params.groups);
    const int64_t x = operand_elements(command, "x (batch x channels x length)",
                                       {s.batch, s.in_channels, s.length});
    const int64_t w = operand_elements(command, "w (out-channels x channels/groups x kernel)",
                                       {s.out_channels, s.in_channels / s.params.groups, s.kernel});
    const int64_t y = operand_elements(command, "y (batch x out-channels x length)",
                                       {s.batch, s.out_channels, s.length});
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    const auto in = random_inputs(command, d, parse_dtype(opt.dtype), {x, w}, y);
    auto tuned = ops::conv1d_tuned(d, in[0], {}, in[1], s, DType::f32);
    return report(tuned, opt);
}

int tune_attention(const TuneOptions& opt) {
    const char* command = "tune attention";
    ops::AttentionShape s;
    s.batch = opt.batch;
    s.heads = opt.heads;
    s.seq_q = s.seq_k = opt.seq;
    s.head_dim = opt.dim;
    const int64_t q = operand_elements(command, "q, k and v (batch x heads x seq x dim)",
                                       {s.batch, s.heads, s.seq_q, s.head_dim});
    Device& d = opt.device.empty() ? best_device() : find_device(opt.device);
    const auto in = random_inputs(command, d, parse_dtype(opt.dtype), {q, q, q}, q);
    auto tuned = ops::attention_tuned(d, in[0], in[1], in[2], s, {.causal = opt.causal});
    return report(tuned, opt);
}

}  // namespace

Command add_tune_command(CLI::App& parent) {
    auto* tune = parent.add_subcommand("tune", "Tune a shipped op for one shape on one device");
    tune->require_subcommand(1);
    auto opt = std::make_shared<TuneOptions>();
    auto* rms =
        tune->add_subcommand("rms_norm", "out = x / sqrt(mean(x^2) + eps) * w over rows of n");
    add_number_option(rms, "--rows", opt->rows, "rows")->required();
    add_number_option(rms, "--n", opt->n, "row length")->required();
    rms->add_option("--dtype", opt->dtype, "f32, f16 or bf16")
        ->check(CLI::IsMember({"f32", "f16", "bf16"}));
    auto* mv = tune->add_subcommand("matvec_q8", "y = W x with W and x in Q8_0 blocks (dp4a)");
    add_number_option(mv, "--rows", opt->rows, "rows of W")->required();
    add_number_option(mv, "--k", opt->k, "columns of W, a multiple of 64")->required();
    auto* mm = tune->add_subcommand("matmul", "C = A B in f32 (exact class)");
    add_number_option(mm, "--m", opt->m, "rows of A and C")->required();
    add_number_option(mm, "--n", opt->n, "columns of B and C")->required();
    add_number_option(mm, "--k", opt->k, "columns of A, rows of B")->required();
    auto* conv = tune->add_subcommand("conv1d", "y = conv1d(x, w) in PyTorch's layouts");
    add_number_option(conv, "--channels", opt->channels, "input channels")->required();
    add_number_option(conv, "--length", opt->length, "input length")->required();
    add_number_option(conv, "--out-channels", opt->out_channels, "output channels")->required();
    add_number_option(conv, "--kernel", opt->kernel, "taps")->required();
    add_number_option(conv, "--stride", opt->stride, "stride (1)");
    add_number_option(conv, "--padding", opt->padding, "padding on each side (0)", int64_t{0});
    add_number_option(conv, "--dilation", opt->dilation, "dilation (1)");
    add_number_option(conv, "--groups", opt->groups, "groups (1)");
    auto* attn = tune->add_subcommand("attention", "softmax(q k^T / sqrt(dim)) v, online softmax");
    add_number_option(attn, "--heads", opt->heads, "heads")->required();
    add_number_option(attn, "--seq", opt->seq, "sequence length")->required();
    add_number_option(attn, "--dim", opt->dim, "head dimension")->required();
    attn->add_flag("--causal", opt->causal, "mask keys after each query");
    for (auto* sub : {mm, conv, attn}) {
        add_number_option(sub, "--batch", opt->batch, "batch (1)");
        sub->add_option("--dtype", opt->dtype, "inputs: f32, f16 or bf16 (computed in f32)")
            ->check(CLI::IsMember({"f32", "f16", "bf16"}));
    }
    for (auto* sub : {rms, mv, mm, conv, attn}) {
        sub->add_option("--device", opt->device, "device id, index or backend (default: the best)");
        sub->add_flag("--json", opt->json, "print one JSON object");
    }
    return {tune, [opt, rms, mv, mm, conv] {
                if (rms->parsed()) return tune_rms_norm(*opt);
                if (mv->parsed()) return tune_matvec(*opt);
                if (mm->parsed()) return tune_matmul(*opt);
                if (conv->parsed()) return tune_conv1d(*opt);
                return tune_attention(*opt);
            }};
}

}  // namespace kiln::cli
