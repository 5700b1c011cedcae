// attention in the DSL: one kernel source, monomorphized per dtypes, head_dim and schedule.
#include "ops/attention/attention.hpp"
#include "ops/class_domain.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/ceil_div.hpp"
#include "base/checked_mul.hpp"
#include "kiln/dsl.hpp"
#include "kiln/math.hpp"
#include "ops/attention/attention_parts.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/kernel_parts.hpp"
#include "ops/matmul/matmul.hpp"

namespace kiln::ops {
namespace attention_detail {

std::optional<Expr> batch_keys(KernelBuilder& k, const Params& p, const Expr& bh) {
    if (!p.key_length) return std::nullopt;
    return k.let(p.key_length(bh / p.heads), "batch_keys");
}

QueryBlock query_block(KernelBuilder& k, const Params& p, int rows) {
    Var blocks_q = k.let((p.seq_q + (rows - 1)) / rows, "blocks_q");
    Var block = k.let(k.block_index(), "block");
    Var bh = k.let(block / blocks_q, "bh");
    return {bh, k.let((blocks_q - 1 - block % blocks_q) * rows, "i0")};
}

Expr key_limit(const Params& p, const std::optional<Expr>& keys, const Expr& i) {
    const Expr limit = select(p.causal != 0, min(p.seq_k - p.seq_q + i + 1, p.seq_k), p.seq_k);
    return keys ? min(limit, *keys) : limit;
}

Expr kv_row(const Params& p, const Expr& bh) {
    return bh / p.heads * p.kv_heads + bh % p.heads / (p.heads / p.kv_heads);
}

Expr weight(const Expr& x) {
    const Expr below = x < kAttentionWeightFloor;
    return select(below, 0.0f, exp(select(below, kAttentionWeightFloor, x)));
}

Expr rescale(const Expr& m, const Expr& m_new) {
    return select(m == kMinusInf, 0.0f, weight(m - m_new));
}

Expr to_output(const AttentionTypes& t, const Expr& v) {
    return t.output == DType::f32 ? v : cast(t.output, v);
}

}  // namespace attention_detail

namespace {

using namespace attention_detail;

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
// The longest sequence: a block's rows or keys past its end (at most 1024) stay in 32 bits.
constexpr int64_t kMaxSeq = kMaxIndex - 1024;

bool pow2(int v) {
    return v >= 1 && std::has_single_bit(static_cast<unsigned>(v));
}

void check_schedule(const AttentionSchedule& s) {
    if (s.tensor_core()) {
        if (!pow2(s.warps) || s.warps > 8 || s.rows != 16 * s.warps || s.staged || s.lockstep)
            fail(
                "attention schedule {}: {} warps for {} rows; expected 1, 2, 4 or 8 warps of 16 "
                "rows each, neither staged nor lockstep",
                s.name, s.warps, s.rows);
        if (s.stages < 1 || s.stages > 3)
            fail("attention schedule {}: {} stages; expected 1 to 3", s.name, s.stages);
        return;
    }
    if (s.stages != 1)
        fail(
            "attention schedule {}: {} stages on an exact point; expected 1 (tensor-core points "
            "only)",
            s.name, s.stages);
    if (!pow2(s.rows) || s.rows > 1024)
        fail("attention schedule {}: {} rows a block; expected a power of two up to 1024", s.name,
             s.rows);
    if (s.lockstep && s.staged)
        fail("attention schedule {}: lockstep with shared score tiles; expected a direct point",
             s.name);
    if (!s.staged) {
        if (s.tq != 1 || s.tk != 1)
            fail("attention schedule {}: direct with a {}x{} score tile; expected 1x1", s.name,
                 s.tq, s.tk);
        return;
    }
    if (!pow2(s.tq) || !pow2(s.tk) || s.tq > 8 || s.tk > 8)
        fail("attention schedule {}: score tile {}x{}; expected powers of two from 1 to 8", s.name,
             s.tq, s.tk);
    if (s.rows < 4 || s.rows % s.tq != 0)
        fail("attention schedule {}: {} rows a block; expected at least 4, a multiple of tq {}",
             s.name, s.rows, s.tq);
    if (s.threads() > 1024 || s.threads() < s.rows)
        fail(
            "attention schedule {}: {} threads a block; expected {} to 1024 (one per row at least)",
            s.name, s.threads(), s.rows);
}

void check_types(const AttentionTypes& t) {
    if (!is_input_float(t.input))
        fail("attention: inputs are {}; expected f32, f16 or bf16", name(t.input));
    if (t.output != DType::f32 && t.output != t.input)
        fail("attention: output dtype {} for {} inputs; expected f32{}", name(t.output),
             name(t.input), t.input == DType::f32 ? "" : fmt::format(" or {}", name(t.input)));
    if (t.head_dim < 1 || t.head_dim > kAttentionMaxHeadDim)
        fail("attention: head_dim {}; expected 1 to {}", t.head_dim, kAttentionMaxHeadDim);
}

int64_t shared_bytes(const AttentionSchedule& s, int head_dim) {
    if (s.tensor_core()) return tensor_core_shared_bytes(s, head_dim);
    if (s.lockstep) return lockstep_shared_bytes(s, head_dim);
    return s.staged ? geometry(s, head_dim).shared_bytes : 0;
}

// kiln::Error unless a point's shared tiles fit every backend's static limit, and unless a
// tensor-core point has f16/bf16 inputs.
void check_shared(const AttentionTypes& t, const AttentionSchedule& s) {
    if (!attention_fits(s, t.head_dim))
        fail(
            "attention schedule {}: head_dim {} needs {} bytes of shared memory; expected at most "
            "{}",
            s.name, t.head_dim, shared_bytes(s, t.head_dim), kMaxSharedBytes);
    if (s.tensor_core()) check_class(MatmulClass::tensor_core, t.input, "attention");
}

// The kernel's parameters, in launch order: q, k, v, o, then the sizes.
struct KernelParams {
    AttentionViews views;
    Memory q, k, v, o;
};

KernelParams declare_params(KernelBuilder& k, const AttentionTypes& t) {
    Memory q = k.input("q", t.input);
    Memory kk = k.input("k", t.input);
    Memory v = k.input("v", t.input);
    Memory o = k.output("o", t.output);
    auto i32 = [&](const char* n) { return k.scalar(n, DType::i32); };
    Expr batch = i32("batch"), heads = i32("heads"), kv_heads = i32("kv_heads");
    Expr seq_q = i32("seq_q"), seq_k = i32("seq_k"), causal = i32("causal");
    Expr scale = k.scalar("scale", DType::f32);
    return {{buffer_elements(q), buffer_elements(kk), buffer_elements(v), batch, heads, kv_heads,
             seq_q, seq_k, causal, scale},
            q,
            kk,
            v,
            o};
}

// Whether a buffer's length is exactly the product of the factors (each >= 1), in i64 without
// overflow: each partial product is compared with the length before the next factor.
Expr holds_exactly(const Memory& m, const std::vector<Expr>& factors) {
    const Expr len = cast(DType::i64, m.len());
    Expr product = cast(DType::i64, factors[0]);
    Expr ok = product <= len;
    for (size_t i = 1; i < factors.size(); ++i) {
        product = product * cast(DType::i64, factors[i]);
        ok = ok && product <= len;
    }
    return ok && product == len;
}

void require_contract(KernelBuilder& k, const KernelParams& kp, int head_dim) {
    const AttentionViews& p = kp.views;
    k.require(p.batch >= 1 && p.heads >= 1 && p.kv_heads >= 1 && p.seq_q >= 1 && p.seq_k >= 1,
              "batch, heads, kv_heads, seq_q and seq_k are >= 1");
    k.require(p.seq_q <= static_cast<int32_t>(kMaxSeq) && p.seq_k <= static_cast<int32_t>(kMaxSeq),
              fmt::format("seq_q and seq_k are at most {}", kMaxSeq));
    k.require(p.heads % p.kv_heads == 0, "kv_heads divides heads");
    k.require(p.causal == 0 || p.causal == 1, "causal is 0 or 1");
    k.require(p.causal == 0 || p.seq_q <= p.seq_k, "a causal launch has seq_q <= seq_k");
    const Expr d = head_dim;
    k.require(holds_exactly(kp.q, {p.batch, p.heads, p.seq_q, d}),
              "q holds batch x heads x seq_q x head_dim elements");
    k.require(holds_exactly(kp.k, {p.batch, p.kv_heads, p.seq_k, d}),
              "k holds batch x kv_heads x seq_k x head_dim elements");
    k.require(holds_exactly(kp.v, {p.batch, p.kv_heads, p.seq_k, d}),
              "v holds batch x kv_heads x seq_k x head_dim elements");
    k.require(holds_exactly(kp.o, {p.batch, p.heads, p.seq_q, d}),
              "o holds batch x heads x seq_q x head_dim elements");
}

// The direct form: one thread per query row, the op's loops as written.
void direct_form(KernelBuilder& k, const Params& p, const AttentionTypes& t) {
    const int D = t.head_dim;
    Var row = k.let(k.absolute_pos(), "row");
    Var rows = k.let(p.batch * p.heads * p.seq_q, "rows");  // <= q's length: fits i32
    k.if_(row < rows, [&] {
        Var i = k.let(row % p.seq_q, "i");
        Var q_at = k.let(row * D, "q_at");
        Var kv_at = k.let(kv_row(p, row / p.seq_q) * p.seq_k * D, "kv_at");
        Var limit = k.let(key_limit(p, batch_keys(k, p, row / p.seq_q), i), "limit");
        std::vector<Var> q, acc;
        for (int d = 0; d < D; ++d) q.push_back(k.let(to_f32(p.q(q_at + d)), "q"));
        for (int d = 0; d < D; ++d) acc.push_back(k.let(DType::f32, 0.0f, "acc"));
        Var m = k.let(DType::f32, kMinusInf, "m");
        Var l = k.let(DType::f32, 0.0f, "l");
        Memory s = k.local_array(DType::f32, kKeyBlock, "s");
        k.for_(
            0, limit,
            [&](Expr t0) {
                Var n = k.let(min(limit - t0, kKeyBlock), "n");
                Var m_new = k.let(m.expr(), "m_new");
                k.for_(0, n, [&](Expr j) {
                    Var key = k.let(kv_at + (t0 + j) * D, "key");
                    Var dot = k.let(DType::f32, 0.0f, "dot");
                    for (int d = 0; d < D; ++d) dot = fma(q[d], to_f32(p.k(key + d)), dot);
                    Var sj = k.let(dot * p.scale, "s_j");
                    s[j] = sj;
                    m_new = max(m_new, sj);
                });
                Var c = k.let(rescale(m, m_new), "c");
                l = l * c;
                for (Var& a : acc) a = a * c;
                k.for_(0, n, [&](Expr j) {
                    Var pj = k.let(weight(s[j] - m_new), "p_j");
                    l = l + pj;
                    Var value = k.let(kv_at + (t0 + j) * D, "value");
                    for (int d = 0; d < D; ++d) acc[d] = fma(pj, to_f32(p.v(value + d)), acc[d]);
                });
                m = m_new;
            },
            kKeyBlock);
        for (int d = 0; d < D; ++d) p.store(q_at + d, acc[d] / l);
    });
}

// The memo key of a kernel: every comptime value it is built from.
std::string kernel_key(const AttentionTypes& t, const AttentionSchedule& s) {
    return fmt::format("attention/{}/{}/d{}/{}/r{}q{}k{}s{}l{}w{}p{}", name(t.input),
                       name(t.output), t.head_dim, s.name, s.rows, s.tq, s.tk, s.staged, s.lockstep,
                       s.warps, s.stages);
}

std::function<ir::Kernel()> builder(const AttentionTypes& t, const AttentionSchedule& s) {
    return [t, s] { return attention_kernel(t, s); };
}

AttentionShape resolved(const AttentionShape& s) {
    AttentionShape r = s;
    if (r.kv_heads == 0) r.kv_heads = r.heads;
    return r;
}

std::string shape_text(const AttentionShape& s) {
    return fmt::format("batch={} heads={} kv_heads={} seq_q={} seq_k={} head_dim={}", s.batch,
                       s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim);
}

// The element count batch x heads x seq x head_dim of a buffer, checked: kiln::Error naming the
// buffer when it passes 32-bit indices or is not `count` (when given).
void check_count(const char* what, const char* heads_name, int64_t batch, int64_t heads,
                 int64_t seq, int64_t head_dim, std::optional<size_t> count) {
    const char* seq_name = what[0] == 'k' || what[0] == 'v' ? "seq_k" : "seq_q";
    const std::string dims = fmt::format("batch x {} x {} x head_dim = {} x {} x {} x {}",
                                         heads_name, seq_name, batch, heads, seq, head_dim);
    std::optional<int64_t> n = checked_mul(batch, heads);
    if (n) n = checked_mul(*n, seq);
    if (n) n = checked_mul(*n, head_dim);
    if (!n || *n > kMaxIndex)
        fail("attention: {} is {}, past {} elements; expected at most {} (32-bit indices)", what,
             dims, kMaxIndex, kMaxIndex);
    if (count && static_cast<int64_t>(*count) != *n)
        fail("attention: {} has {} elements; expected {} = {}", what, *count, dims, *n);
}

AttentionTypes types_of(const Buffer& q, const AttentionShape& s, const AttentionOptions& o) {
    return {q.dtype(), o.out, static_cast<int>(s.head_dim)};
}

Tuned<Buffer> make_tuned(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                         const AttentionShape& shape, const AttentionOptions& options) {
    const AttentionShape s = resolved(shape);
    const AttentionTypes t = types_of(q, s, options);
    // The class's points that fit this head_dim.
    std::vector<const AttentionSchedule*> points;
    for (const auto& sc : attention_domain(device, options.arithmetic, t.head_dim))
        if (attention_fits(sc, t.head_dim)) points.push_back(&sc);
    const bool on_tensor_cores = points.front()->tensor_core();
    Tuned<Buffer> tuned(
        "attention",
        fmt::format("batch={},heads={},kv_heads={},seq_q={},seq_k={},d={},in={},out={},causal={}{}",
                    s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim, name(t.input),
                    name(t.output), options.causal ? 1 : 0,
                    on_tensor_cores ? ",class=tensor_core" : ""),
        device);
    const VariantTable& table = memo_variant_table(
        fmt::format("attention/{}/{}/d{}{}", name(t.input), name(t.output), t.head_dim,
                    on_tensor_cores ? "/tensor_core" : ""),
        device.info().backend, "attention", [&] {
            std::vector<NamedKernel> kernels;
            for (const auto* sc : points)
                kernels.push_back({sc->name, kernel_key(t, *sc), builder(t, *sc)});
            return kernels;
        });
    tuned.variants(table,
                   [&device, &q, &k, &v, s, options, points](size_t i) -> Tuned<Buffer>::Closure {
                       return [&device, &q, &k, &v, s, options, sc = points[i]](int iters) {
                           return attention_bench(device, q, k, v, s, options, *sc, iters);
                       };
                   });
    return tuned;
}

}  // namespace

bool attention_fits(const AttentionSchedule& schedule, int head_dim) {
    return shared_bytes(schedule, head_dim) <= kMaxSharedBytes;
}

float attention_scale(const AttentionShape& shape, const AttentionOptions& options) {
    if (options.scale) return *options.scale;
    return 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
}

const std::vector<AttentionSchedule>& attention_variants() {
    // Each point's name spells its knobs, so the two cannot drift apart.
    auto direct = [](int rows) {
        return AttentionSchedule{fmt::format("d{}", rows), false, rows, 1, 1};
    };
    auto staged = [](int rows, int tq, int tk) {
        return AttentionSchedule{fmt::format("s{}_t{}x{}", rows, tq, tk), true, rows, tq, tk};
    };
    auto lockstep = [](int rows) {
        return AttentionSchedule{fmt::format("l{}", rows), false, rows, 1, 1, true};
    };
    static const std::vector<AttentionSchedule> variants = {
        direct(64),       staged(16, 1, 4), staged(32, 2, 4), staged(64, 4, 4),
        staged(64, 4, 8), lockstep(16),     staged(64, 8, 4), staged(32, 4, 4),
    };
    return variants;
}

const std::vector<AttentionSchedule>& attention_tensor_core_variants() {
    auto point = [](int warps, int stages = 1) {
        AttentionSchedule s{fmt::format("tc{}_w{}{}", 16 * warps, warps,
                                        stages > 1 ? fmt::format("_s{}", stages) : ""),
                            false, 16 * warps, 1, 1};
        s.warps = warps;
        s.stages = stages;
        return s;
    };
    static const std::vector<AttentionSchedule> variants = {point(4), point(8), point(2),
                                                            point(4, 2), point(2, 2)};
    return variants;
}

const std::vector<AttentionSchedule>& attention_all_variants() {
    static const std::vector<AttentionSchedule> all =
        both_classes(attention_variants(), attention_tensor_core_variants());
    return all;
}

std::span<const AttentionSchedule> attention_domain(const Device& device, MatmulClass cls,
                                                    int head_dim) {
    const auto& tensor_core = attention_tensor_core_variants();
    const bool fits = std::any_of(tensor_core.begin(), tensor_core.end(),
                                  [&](const auto& s) { return attention_fits(s, head_dim); });
    return class_points(attention_all_variants(), attention_variants().size(),
                        cls == MatmulClass::tensor_core && device.info().tensor_cores && fits);
}

const AttentionSchedule& attention_variant(const std::string& n) {
    for (const auto& s : attention_all_variants())
        if (s.name == n) return s;
    fail("attention: no schedule named '{}'", n);
}

ir::Kernel attention_kernel(const AttentionTypes& t, const AttentionSchedule& s) {
    check_types(t);
    check_schedule(s);
    check_shared(t, s);
    KernelBuilder k(
        fmt::format("attention_{}_{}_d{}_{}", name(t.input), name(t.output), t.head_dim, s.name),
        s.threads());
    const KernelParams p = declare_params(k, t);
    require_contract(k, p, t.head_dim);
    attention_body(k, p.views, t, s,
                   [&](const Expr& e, const Expr& v) { p.o[e] = to_output(t, v); });
    return k.finish();
}

void attention_body(KernelBuilder& k, const AttentionViews& views, const AttentionTypes& t,
                    const AttentionSchedule& s, const AttentionStore& store) {
    check_types(t);
    check_schedule(s);
    check_shared(t, s);
    const Params p{views, store};
    if (s.tensor_core())
        tensor_core_form(k, p, t, s);
    else if (s.staged)
        staged_form(k, p, t, s);
    else if (s.lockstep)
        lockstep_form(k, p, t, s);
    else
        direct_form(k, p, t);
}

int64_t attention_grid(const AttentionShape& shape, const AttentionSchedule& s) {
    const AttentionShape r = resolved(shape);
    if (s.staged || s.lockstep || s.tensor_core())
        return r.batch * r.heads * ceil_div(r.seq_q, s.rows);
    return ceil_div(r.batch * r.heads * r.seq_q, s.rows);
}

std::vector<Arg> attention_scalars(const AttentionShape& shape, const AttentionOptions& options) {
    const AttentionShape r = resolved(shape);
    auto i32 = [](int64_t v) { return Arg(static_cast<int32_t>(v)); };
    return {i32(r.batch),
            i32(r.heads),
            i32(r.kv_heads),
            i32(r.seq_q),
            i32(r.seq_k),
            i32(options.causal ? 1 : 0),
            Arg(attention_scale(r, options))};
}

void attention_check_shape(const AttentionShape& shape, const AttentionOptions& options,
                           DType input) {
    const AttentionShape s = resolved(shape);
    if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.seq_q < 1 || s.seq_k < 1 ||
        s.head_dim < 1)
        fail("attention: shape {}; expected every size >= 1 (kv_heads 0: heads)", shape_text(s));
    if (s.head_dim > kAttentionMaxHeadDim)
        fail("attention: head_dim {}; expected at most {}", s.head_dim, kAttentionMaxHeadDim);
    if (s.seq_q > kMaxSeq || s.seq_k > kMaxSeq)
        fail("attention: seq_q {} and seq_k {}; expected each at most {}", s.seq_q, s.seq_k,
             kMaxSeq);
    if (s.heads % s.kv_heads != 0)
        fail(
            "attention: heads {} is not a multiple of kv_heads {}; expected kv_heads to divide "
            "heads",
            s.heads, s.kv_heads);
    if (options.causal && s.seq_q > s.seq_k)
        fail(
            "attention: causal with seq_q {} > seq_k {}: the first {} query rows would see no "
            "key; expected seq_q <= seq_k",
            s.seq_q, s.seq_k, s.seq_q - s.seq_k);
    if (!is_input_float(input)) fail("attention: q is {}; expected f32, f16 or bf16", name(input));
    check_types({input, options.out, static_cast<int>(s.head_dim)});
    check_class(options.arithmetic, input, "attention");
    if (options.scale && !std::isfinite(*options.scale))
        fail("attention: scale {}; expected a finite value", *options.scale);
    // 32-bit indices (each count's exact value is checked against its buffer where there is one).
    check_count("q", "heads", s.batch, s.heads, s.seq_q, s.head_dim, std::nullopt);
    check_count("k", "kv_heads", s.batch, s.kv_heads, s.seq_k, s.head_dim, std::nullopt);
}

void attention_key_length_error(int64_t length, int64_t batch, int64_t seq_k) {
    fail(
        "scaled_dot_product_attention: key length {} of batch {} is out of range; expected 1 to "
        "seq_k = {}",
        length, batch, seq_k);
}

void attention_check(const Buffer& q, const Buffer& k, const Buffer& v, const AttentionShape& shape,
                     const AttentionOptions& options) {
    attention_check_shape(shape, options, q.dtype());
    const AttentionShape s = resolved(shape);
    for (const Buffer* b : {&k, &v})
        if (b->dtype() != q.dtype())
            fail("attention: {} is {} but q is {}; expected the same dtype", b == &k ? "k" : "v",
                 name(b->dtype()), name(q.dtype()));
    for (const Buffer* b : {&k, &v})
        if (&b->device() != &q.device())
            fail("attention: {} lives on {} but q on {}; expected one device", b == &k ? "k" : "v",
                 b->device().info().id, q.device().info().id);
    check_count("q", "heads", s.batch, s.heads, s.seq_q, s.head_dim, q.count());
    check_count("k", "kv_heads", s.batch, s.kv_heads, s.seq_k, s.head_dim, k.count());
    check_count("v", "kv_heads", s.batch, s.kv_heads, s.seq_k, s.head_dim, v.count());
}

Timed<Buffer> attention_bench(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                              const AttentionShape& shape, const AttentionOptions& options,
                              const AttentionSchedule& schedule, int iters) {
    attention_check(q, k, v, shape, options);
    check_schedule(schedule);
    if (&q.device() != &device)
        fail("attention: q lives on {}; expected {}", q.device().info().id, device.info().id);
    const AttentionShape s = resolved(shape);
    const AttentionTypes t = types_of(q, s, options);
    auto compiled = memo_compiled(device, kernel_key(t, schedule), builder(t, schedule));
    Buffer o(device, options.out, q.count());
    std::vector<Arg> args{q, k, v, o};
    for (const Arg& a : attention_scalars(s, options)) args.push_back(a);
    const int64_t grid = attention_grid(s, schedule);
    const double ms = time_dispatches(device, iters, [&] { compiled->launch(grid, args); });
    return {std::move(o), ms};
}

Tuned<Buffer> attention_tuned(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                              const AttentionShape& shape, const AttentionOptions& options) {
    attention_check(q, k, v, shape, options);
    return make_tuned(device, q, k, v, shape, options);
}

Buffer attention(Device& device, const Buffer& q, const Buffer& k, const Buffer& v,
                 const AttentionShape& shape, const AttentionOptions& options, Tuner& tuner) {
    attention_check(q, k, v, shape, options);
    if (&q.device() != &device)
        fail("attention: q lives on {}; expected {}", q.device().info().id, device.info().id);
    return make_tuned(device, q, k, v, shape, options).run(tuner);
}

}  // namespace kiln::ops
