// The op areas: matmul, conv (conv1d), attention and quantized (matvec_q8), each an op written
// once with its own schedule domain, run at schedule points and compared with its oracle in
// src/oracle/. Without --sweep a case runs the domain's first point (the tuner's default) in f32;
// with --sweep every point of the domain, in every dtype pair the case covers.
#include <span>

#include <fmt/format.h>

#include "conformance/case.hpp"
#include "conformance/compare.hpp"
#include "kiln/buffer.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "ops/attention/attention.hpp"
#include "ops/conv1d/conv1d.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/attention.hpp"
#include "oracle/conv1d.hpp"
#include "oracle/matmul.hpp"
#include "oracle/matvec_q8.hpp"

namespace kiln::conformance {

namespace {

using Bytes = std::vector<uint8_t>;

struct TypePair {
    DType input, output;
};

// The contractions' dtype pairs: f32 alone without --sweep; with it, each half type with an f32
// output and with its own.
std::vector<TypePair> type_pairs(bool sweep) {
    if (!sweep) return {{DType::f32, DType::f32}};
    return {{DType::f32, DType::f32},
            {DType::f16, DType::f32},
            {DType::bf16, DType::f32},
            {DType::f16, DType::f16},
            {DType::bf16, DType::bf16}};
}

// The points a case runs: the first (the default) or, with --sweep, all.
template <typename Domain>
std::vector<const typename Domain::value_type*> points(const Domain& domain, bool sweep) {
    std::vector<const typename Domain::value_type*> out;
    for (const auto& s : domain) {
        out.push_back(&s);
        if (!sweep) break;
    }
    return out;
}

Buffer device_buffer(Device& d, DType t, const Bytes& bytes) {
    Buffer b(d, t, bytes.size() / size_of(t));
    b.upload_bytes(bytes);
    return b;
}

// One point's run: compares `got` with `want` and reports it under the op's form and point.
void report_point(CaseContext& ctx, const std::string& form, const std::string& point,
                  const std::string& types, DType out, const Bytes& got, const Bytes& want) {
    Result r = ctx.base;
    r.member = form;
    r.schedule = fmt::format("{} {}", point, types);
    report_outputs(ctx, std::move(r), {out}, {got}, {want});
}

std::string types_text(const TypePair& t) {
    return fmt::format("{}->{}", name(t.input), name(t.output));
}

// The inputs the tensor-core class's checks use: bf16 (with --sweep f16 too).
std::vector<DType> tensor_core_inputs(const CaseContext& ctx) {
    if (ctx.sweep) return {DType::bf16, DType::f16};
    return {DType::bf16};
}

// The tensor-core class where the device has tensor cores (elsewhere the class runs the exact
// points, which the cases run): f32 output, at the class's first point (with --sweep every one),
// each within the class's bound of the oracle (`want`, `bound`) and bit-identical to the class's
// first point. run(point) gives a point's output.
template <typename Point, typename Run>
void report_tensor_core_points(CaseContext& ctx, std::span<const Point> domain, DType input,
                               const Bytes& want, const std::vector<double>& bound,
                               const Run& run) {
    Bytes first;
    for (const auto* p : points(domain, ctx.sweep)) {
        const Bytes got = run(*p);
        Result r = ctx.base;
        r.member = "tensor_core";
        r.schedule = fmt::format("{} {}->f32", p->name, name(input));
        std::optional<Mismatch> m = compare_within(got, want, bound);
        std::string what = "lie outside the tensor-core class's bound of the oracle";
        if (!m && !first.empty()) {
            m = compare(DType::f32, got, first);
            what = "differ from the class's first point";
        }
        if (first.empty()) first = got;
        if (m) {
            r.status = Status::failed;
            r.miscompile = true;
            r.index = m->index;
            r.got = m->got;
            r.want = m->want;
            r.detail = fmt::format("{} of {} elements {}", m->count, bound.size(), what);
        }
        ctx.report(std::move(r));
    }
}

void matmul_tensor_core_points(CaseContext& ctx, const ops::MatmulShape& shape,
                               const ops::MatmulOperand& av, const ops::MatmulOperand& bv) {
    for (DType input : tensor_core_inputs(ctx)) {
        const Bytes a = random_bytes(ctx, input, size_t(shape.batch * shape.m * shape.k));
        const Bytes b = random_bytes(ctx, input, size_t(shape.batch * shape.k * shape.n));
        const Buffer ab = device_buffer(ctx.device, input, a);
        const Buffer bb = device_buffer(ctx.device, input, b);
        report_tensor_core_points(
            ctx, ops::matmul_domain(ctx.device, ops::MatmulClass::tensor_core), input,
            oracle::matmul(input, DType::f32, a, av, b, bv, shape),
            oracle::matmul_tensor_core_bound(input, a, av, b, bv, shape),
            [&](const ops::MatmulSchedule& p) {
                return ops::matmul_bench(ctx.device, ab, av, bb, bv, shape, DType::f32, p, 1)
                    .output.download_bytes();
            });
    }
}

void matmul_case(CaseContext& ctx) {
    const Shape s = draw_shape(
        {Dim::choice({1, 2, 3}), Dim::range(1, 131), Dim::range(1, 133), Dim::range(1, 37)},
        ctx.rng, ctx.run);
    const ops::MatmulShape shape{s[0], s[1], s[2], s[3]};
    // Run 1 reads both operands transposed; later runs draw it.
    const bool at = ctx.run == 1 || (ctx.run > 1 && ctx.rng() % 2);
    const bool bt = ctx.run == 1 || (ctx.run > 1 && ctx.rng() % 2);
    ctx.base.shape = fmt::format("batch {} m {} n {} k {}{}{}", shape.batch, shape.m, shape.n,
                                 shape.k, at ? " A^T" : "", bt ? " B^T" : "");
    const ops::MatmulOperand av{0, shape.m * shape.k, 0, at}, bv{0, shape.k * shape.n, 0, bt};
    for (const TypePair& t : type_pairs(ctx.sweep)) {
        const Bytes a = random_bytes(ctx, t.input, size_t(shape.batch * shape.m * shape.k));
        const Bytes b = random_bytes(ctx, t.input, size_t(shape.batch * shape.k * shape.n));
        const Bytes want = oracle::matmul(t.input, t.output, a, av, b, bv, shape);
        const Buffer ab = device_buffer(ctx.device, t.input, a);
        const Buffer bb = device_buffer(ctx.device, t.input, b);
        for (const auto* p : points(ops::matmul_variants(), ctx.sweep)) {
            const auto got =
                ops::matmul_bench(ctx.device, ab, av, bb, bv, shape, t.output, *p, 1).output;
            report_point(ctx, p->staged ? "staged" : "direct", p->name, types_text(t), t.output,
                         got.download_bytes(), want);
        }
    }
    if (ctx.device.info().tensor_cores) matmul_tensor_core_points(ctx, shape, av, bv);
}

void conv_case(CaseContext& ctx) {
    const Shape s = draw_shape({Dim::choice({1, 2}), Dim::choice({1, 2}), Dim::range(1, 5),
                                Dim::range(1, 9), Dim::range(1, 5), Dim::range(1, 97),
                                Dim::choice({1, 2}), Dim::range(0, 2), Dim::choice({1, 2})},
                               ctx.rng, ctx.run);
    ops::Conv1dShape shape;
    shape.batch = s[0];
    shape.params.groups = s[1];
    shape.in_channels = s[1] * s[2];
    shape.out_channels = s[1] * s[3];
    shape.kernel = s[4];
    shape.params.stride = s[6];
    shape.params.padding = s[7];
    shape.params.dilation = s[8];
    // The padded input holds the dilated kernel at least once.
    shape.length =
        std::max(s[5], shape.params.dilation * (shape.kernel - 1) + 1 - 2 * shape.params.padding);
    shape.length = std::max<int64_t>(shape.length, 1);
    ctx.base.shape = fmt::format(
        "batch {} channels {}->{} length {} kernel {} stride {} padding "
        "{} dilation {} groups {}",
        shape.batch, shape.in_channels, shape.out_channels, shape.length, shape.kernel,
        shape.params.stride, shape.params.padding, shape.params.dilation, shape.params.groups);
    const ops::Conv1dView xv{0, shape.in_channels * shape.length, 0};
    for (const TypePair& t : type_pairs(ctx.sweep)) {
        const Bytes x =
            random_bytes(ctx, t.input, size_t(shape.batch * shape.in_channels * shape.length));
        const Bytes w = random_bytes(
            ctx, t.input,
            size_t(shape.out_channels * (shape.in_channels / shape.params.groups) * shape.kernel));
        const Bytes want = oracle::conv1d(t.input, t.output, x, xv, w, shape);
        const Buffer xb = device_buffer(ctx.device, t.input, x);
        const Buffer wb = device_buffer(ctx.device, t.input, w);
        for (const auto* p : points(ops::conv1d_variants(), ctx.sweep)) {
            const auto got =
                ops::conv1d_bench(ctx.device, xb, xv, wb, shape, t.output, *p, 1).output;
            report_point(ctx, p->staged ? "staged" : "direct", p->name, types_text(t), t.output,
                         got.download_bytes(), want);
        }
    }
    if (!ctx.device.info().tensor_cores) return;
    for (DType input : tensor_core_inputs(ctx)) {
        const Bytes x =
            random_bytes(ctx, input, size_t(shape.batch * shape.in_channels * shape.length));
        const Bytes w = random_bytes(
            ctx, input,
            size_t(shape.out_channels * (shape.in_channels / shape.params.groups) * shape.kernel));
        const Buffer xb = device_buffer(ctx.device, input, x);
        const Buffer wb = device_buffer(ctx.device, input, w);
        report_tensor_core_points(
            ctx, ops::conv1d_domain(ctx.device, ops::MatmulClass::tensor_core), input,
            oracle::conv1d(input, DType::f32, x, xv, w, shape),
            oracle::conv1d_tensor_core_bound(input, x, xv, w, shape),
            [&](const ops::Conv1dSchedule& p) {
                return ops::conv1d_bench(ctx.device, xb, xv, wb, shape, DType::f32, p, 1)
                    .output.download_bytes();
            });
    }
}

void attention_case(CaseContext& ctx) {
    const Shape s = draw_shape({Dim::choice({1, 2}), Dim::choice({1, 2}), Dim::choice({1, 2}),
                                Dim::range(1, 140), Dim::range(1, 140), Dim::choice({1, 16, 40})},
                               ctx.rng, ctx.run);
    ops::AttentionShape shape;
    shape.batch = s[0];
    shape.kv_heads = s[1];
    shape.heads = s[1] * s[2];
    shape.seq_k = s[3];
    shape.seq_q = std::min(s[4], s[3]);  // causal needs seq_q <= seq_k
    shape.head_dim = s[5];
    ops::AttentionOptions options;
    options.causal = ctx.run == 1 || (ctx.run > 1 && ctx.rng() % 2);
    ctx.base.shape = fmt::format("batch {} heads {}/{} seq {}x{} head_dim {}{}", shape.batch,
                                 shape.heads, shape.kv_heads, shape.seq_q, shape.seq_k,
                                 shape.head_dim, options.causal ? " causal" : "");
    const auto q_count = size_t(shape.batch * shape.heads * shape.seq_q * shape.head_dim);
    const auto kv_count = size_t(shape.batch * shape.kv_heads * shape.seq_k * shape.head_dim);
    for (const TypePair& t : type_pairs(ctx.sweep)) {
        options.out = t.output;
        const Bytes q = random_bytes(ctx, t.input, q_count);
        const Bytes k = random_bytes(ctx, t.input, kv_count);
        const Bytes v = random_bytes(ctx, t.input, kv_count);
        const Bytes want = oracle::attention(t.input, t.output, q, k, v, shape, options.causal,
                                             ops::attention_scale(shape, options));
        const Buffer qb = device_buffer(ctx.device, t.input, q);
        const Buffer kb = device_buffer(ctx.device, t.input, k);
        const Buffer vb = device_buffer(ctx.device, t.input, v);
        for (const auto* p : points(ops::attention_variants(), ctx.sweep)) {
            const auto got =
                ops::attention_bench(ctx.device, qb, kb, vb, shape, options, *p, 1).output;
            report_point(ctx, p->staged ? "staged" : "direct", p->name, types_text(t), t.output,
                         got.download_bytes(), want);
        }
    }
    if (!ctx.device.info().tensor_cores) return;
    options.out = DType::f32;
    options.arithmetic = ops::MatmulClass::tensor_core;
    const auto domain = ops::attention_domain(ctx.device, options.arithmetic, int(shape.head_dim));
    for (DType input : tensor_core_inputs(ctx)) {
        const Bytes q = random_bytes(ctx, input, q_count);
        const Bytes k = random_bytes(ctx, input, kv_count);
        const Bytes v = random_bytes(ctx, input, kv_count);
        const float scale = ops::attention_scale(shape, options);
        const Buffer qb = device_buffer(ctx.device, input, q);
        const Buffer kb = device_buffer(ctx.device, input, k);
        const Buffer vb = device_buffer(ctx.device, input, v);
        report_tensor_core_points(
            ctx, domain, input,
            oracle::attention(input, DType::f32, q, k, v, shape, options.causal, scale),
            oracle::attention_tensor_core_bound(input, q, k, v, shape, options.causal, scale),
            [&](const ops::AttentionSchedule& p) {
                return ops::attention_bench(ctx.device, qb, kb, vb, shape, options, p, 1)
                    .output.download_bytes();
            });
    }
}

void quantized_case(CaseContext& ctx) {
    const Shape s =
        draw_shape({Dim::range(1, 67), Dim::multiple_of(64, 64, 512)}, ctx.rng, ctx.run);
    const int64_t rows = s[0], k = s[1];
    ctx.base.shape = fmt::format("rows {} k {}", rows, k);
    std::normal_distribution<float> value(0.0f, 2.0f);
    std::vector<float> w(static_cast<size_t>(rows * k)), x(static_cast<size_t>(k));
    for (auto& e : w) e = value(ctx.rng);
    for (auto& e : x) e = value(ctx.rng);
    const Bytes wq = ops::quantize_q8_0(w), xq = ops::quantize_q8_0(x);
    const std::vector<float> want = oracle::matvec_q8(wq, xq, rows, k);
    const Bytes want_bytes(reinterpret_cast<const uint8_t*>(want.data()),
                           reinterpret_cast<const uint8_t*>(want.data() + want.size()));
    const Buffer wb = device_buffer(ctx.device, DType::u8, wq);
    const Buffer xb = device_buffer(ctx.device, DType::u8, xq);
    for (const auto& variant : ops::matvec_q8_variants()) {
        if (!ops::matvec_q8_serves(variant.schedule, k)) continue;
        const auto got = ops::matvec_q8_bench(ctx.device, wb, xb, rows, k, variant.schedule, 1);
        report_point(ctx, "matvec_q8", variant.name, "q8_0->f32", DType::f32,
                     got.output.download_bytes(), want_bytes);
        if (!ctx.sweep) break;
    }
}

}  // namespace

std::vector<Case> op_cases() {
    return {{"matmul", "matmul", matmul_case},
            {"conv", "conv1d", conv_case},
            {"attention", "attention", attention_case},
            {"quantized", "matvec_q8", quantized_case}};
}

}  // namespace kiln::conformance
