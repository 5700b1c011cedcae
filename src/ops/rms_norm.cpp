// rms_norm in the DSL: one kernel source, monomorphized per dtype, n and schedule.
#include "kiln/ops/rms_norm.hpp"

#include "base/ceil_div.hpp"
#include "base/checked_mul.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/kernel_parts.hpp"

#include <bit>
#include <climits>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/compile.hpp"

namespace kiln::ops {
namespace {

constexpr int kLanes = 256;
constexpr int kChunk = 1;

// Elements per thread up to which the normalize pass is unrolled at comptime.
constexpr int kNormalizeUnroll = 32;

// Whether a variant keeps its row in shared memory for this shape (see RmsNormSchedule).
bool caches_row(DType type, int64_t n, const RmsNormSchedule& s) {
    return s.cache_row && s.threads == s.block && s.rows_per_thread == 1 &&
           n * static_cast<int64_t>(size_of(type)) <= kRowCacheBytes;
}

void check_schedule(const RmsNormSchedule& s) {
    auto pow2 = [](int v) { return v >= 1 && std::has_single_bit(static_cast<unsigned>(v)); };
    if (!pow2(s.block) || s.block > 1024)
        fail("rms_norm schedule {}: block {}; expected a power of two up to 1024", s.name, s.block);
    if (!pow2(s.threads) || s.threads > s.block || s.threads > kLanes)
        fail(
            "rms_norm schedule {}: {} threads per row; expected a power of two up to the block "
            "({}) and the fold's {} lanes",
            s.name, s.threads, s.block, kLanes);
    if (s.rows_per_thread < 1 || s.rows_per_thread > 16)
        fail("rms_norm schedule {}: {} rows per thread; expected 1 to 16", s.name,
             s.rows_per_thread);
    if (s.lane_threads != 1 && s.lane_threads != 2)
        fail("rms_norm schedule {}: {} threads per lane; expected 1 or 2", s.name, s.lane_threads);
    if (s.lane_threads > 1 && (!s.row_in_registers || s.threads != kLanes))
        fail("rms_norm schedule {}: {} threads per lane needs the row in registers and {} threads",
             s.name, s.lane_threads, kLanes);
    if (s.vector_lanes != 0 && s.vector_lanes != 2 && s.vector_lanes != 4)
        fail("rms_norm schedule {}: {} vector lanes; expected 0 (off), 2 or 4", s.name,
             s.vector_lanes);
    if (s.vector_lanes != 0 && (s.threads != kLanes / s.vector_lanes || s.rows_per_thread != 1 ||
                                s.cache_row || s.row_in_registers || s.lane_threads != 1))
        fail(
            "rms_norm schedule {}: {} vector lanes need {} threads per row, one row per thread "
            "and neither a row cache, the row in registers nor threads per lane",
            s.name, s.vector_lanes, kLanes / s.vector_lanes);
    if ((s.cache_row || (s.prefetch_w && s.vector_lanes == 0) || s.row_in_registers) &&
        (s.threads * s.lane_threads != s.block || s.rows_per_thread != 1))
        fail(
            "rms_norm schedule {}: caching the row, keeping it in registers or prefetching w needs "
            "a block per row and one row per thread",
            s.name);
    if (s.unroll < 1 || s.unroll > 16)
        fail("rms_norm schedule {}: fold unroll {}; expected 1 to 16", s.name, s.unroll);
}

// The memo key of a variant's kernel: every comptime value it is built from.
std::string variant_key(DType type, int64_t n, const RmsNormSchedule& s) {
    return fmt::format("rms_norm/{}/n={}/{}/b{}t{}r{}u{}c{}p{}g{}l{}v{}k{}", name(type), n, s.name,
                       s.block, s.threads, s.rows_per_thread, s.unroll, s.cache_row, s.prefetch_w,
                       s.row_in_registers, s.lane_threads, s.vector_lanes, s.keep_x);
}

// inv = 1 / sqrt(ss / n + eps), the op's scale for a row whose sum of squares is ss.
Var inverse_rms(KernelBuilder& k, const Expr& ss, int64_t n, const Expr& eps) {
    const Expr n_f32 = constant(DType::f32, static_cast<double>(static_cast<float>(n)));
    return k.let(1.0f / sqrt(ss / n_f32 + eps), "inv");
}

// Elements a thread may keep in registers with vector lanes.
constexpr int kVectorLaneElements = 64;

bool uses_vector_lanes(DType type, int64_t n, const RmsNormSchedule& s) {
    return s.vector_lanes != 0 && type == DType::f32 && n % s.vector_lanes == 0 &&
           s.vector_lanes * ceil_div(n, kLanes) <= kVectorLaneElements;
}

// The vector-lanes kernel body (see RmsNormSchedule::vector_lanes): thread t of its row's
// T = kLanes / Q threads is lanes Q*t ... Q*t+Q-1 of the canonical fold. Step j loads elements
// Q*t + j*kLanes ... + Q-1 with one Q-wide load; n is a multiple of Q, so a step's vector is
// wholly inside the row or wholly past it.
void vector_lanes_body(KernelBuilder& k, int N, const RmsNormSchedule& s, const Memory& x,
                       const Memory& w, Memory& out, const Expr& eps) {
    const int Q = s.vector_lanes, T = kLanes / Q;
    const int steps = static_cast<int>(ceil_div(N, kLanes));
    Var rows = k.let(out.len() / N, "rows");
    Var row = k.let(k.absolute_pos() >> std::countr_zero(static_cast<unsigned>(T)), "row");
    // Clamp instead of branching: every thread of the block reaches the barriers.
    Var base = k.let(min(row.expr(), rows - 1) * N, "base");
    Var t = k.let(k.thread_index() & (T - 1), "t");
    Var first = k.let(t * Q, "first");
    auto at = [&](int j) { return first + j * kLanes; };
    auto whole = [&](int j) { return (j + 1) * int64_t{kLanes} <= N; };
    // A step past the row loads the row's last vector instead (its values are not used).
    auto in_row = [&](int j) { return whole(j) ? at(j) : min(at(j), Expr(N - Q)); };
    auto when_inside = [&](int j, const std::function<void()>& body) {
        if (whole(j))
            body();
        else
            k.if_(at(j) < N, body);
    };
    std::vector<std::vector<Var>> xs, ws;
    for (int j = 0; j < steps; ++j) xs.push_back(k.load_vector(x, base + in_row(j), Q, "xv"));
    if (s.prefetch_w)
        for (int j = 0; j < steps; ++j) ws.push_back(k.load_vector(w, in_row(j), Q, "wv"));
    // Lane Q*t+q's sum: its elements' squares in order, from +0.
    std::vector<Var> sums;
    for (int q = 0; q < Q; ++q) sums.push_back(k.let(DType::f32, 0.0f, "lane_sum"));
    for (int j = 0; j < steps; ++j)
        when_inside(j, [&] {
            for (int q = 0; q < Q; ++q) sums[q] = sums[q] + xs[j][q] * xs[j][q];
        });
    // The fold's thread t takes lanes t, t+T, ...: hand the sums over through shared memory,
    // one row of kLanes per thread group. Fold element i is lane i's sum (+0 + sum == sum: a
    // sum of squares from +0 is never -0).
    auto lanes = k.shared(DType::f32, s.block / T * kLanes, "lanes");
    Var group_lanes = k.let((k.thread_index() - t) * Q, "group_lanes");
    for (int q = 0; q < Q; ++q) lanes[group_lanes + first + q] = sums[q];
    k.barrier();
    Var ss = k.fold(DType::f32, kLanes, rms_norm_fold(N).threads(T),
                    [&](Expr i) -> Expr { return lanes[group_lanes + i].expr(); });
    Var inv = inverse_rms(k, ss, N, eps);
    k.if_(row < rows, [&] {
        for (int j = 0; j < steps; ++j)
            when_inside(j, [&] {
                const std::vector<Var> wj = ws.empty() ? k.load_vector(w, at(j), Q, "wv") : ws[j];
                std::vector<Expr> ys;
                for (int q = 0; q < Q; ++q) ys.push_back(xs[j][q] * inv * wj[q]);
                k.store_vector(out, base + at(j), ys);
            });
    });
}

std::function<ir::Kernel()> builder(DType type, int64_t n, const RmsNormSchedule& s) {
    return [type, n, s] { return rms_norm_kernel(type, n, s); };
}

// Allocates the output and times the dispatches of a variant's kernel (compiled once).
Timed<Buffer> launch_timed(Device& device, const Buffer& x, const Buffer& w, int64_t rows,
                           int64_t n, float eps, const RmsNormSchedule& s, int iters) {
    Buffer out(device, x.dtype(), static_cast<size_t>(rows * n));
    if (rows == 0) return {std::move(out), 0.0};
    auto compiled = memo_compiled(device, variant_key(x.dtype(), n, s), builder(x.dtype(), n, s));
    const int64_t grid = rms_norm_grid(rows, s);
    const double ms = time_dispatches(device, iters, [&] {
        compiled->launch(grid, {x, w, out, eps});
    });
    return {std::move(out), ms};
}

Tuned<Buffer> make_tuned(Device& device, const Buffer& x, const Buffer& w, int64_t n, float eps) {
    const int64_t rows = static_cast<int64_t>(x.count()) / n;
    Tuned<Buffer> tuned("rms_norm", fmt::format("rows={},n={},dtype={}", rows, n, name(x.dtype())),
                        device);
    const VariantTable& table = memo_variant_table(
        fmt::format("rms_norm/{}/n={}", name(x.dtype()), n), device.info().backend, "rms_norm",
        [&] {
            std::vector<NamedKernel> kernels;
            for (const auto& s : rms_norm_variants())
                kernels.push_back({s.name, variant_key(x.dtype(), n, s), builder(x.dtype(), n, s)});
            return kernels;
        });
    tuned.variants(table, [&device, &x, &w, rows, n, eps](size_t i) -> Tuned<Buffer>::Closure {
        return [&device, &x, &w, rows, n, eps, s = &rms_norm_variants()[i]](int iters) {
            return launch_timed(device, x, w, rows, n, eps, *s, iters);
        };
    });
    return tuned;
}

}  // namespace

Fold rms_norm_fold(int64_t /*n*/) {
    return Fold::sum().lanes(kLanes).chunk(kChunk);
}

const std::vector<RmsNormSchedule>& rms_norm_variants() {
    static const std::vector<RmsNormSchedule> variants = {
        {"b64_r1", 64, 1, 1, 1},
        {"b128_r1", 128, 1, 1, 1},
        {"b256_r1", 256, 1, 1, 1},
        {"b64_r2", 64, 1, 2, 1},
        {"warp_b128", 128, 32, 1, 1},
        {"warp_b256", 256, 32, 1, 1},
        {"warp_b128_u2", 128, 32, 1, 2},
        {"warp_b256_u2", 256, 32, 1, 2},
        {"block_b256", 256, 256, 1, 1},
        {"block_b256_u2", 256, 256, 1, 2},
        {"block_b256_u4", 256, 256, 1, 4},
        {"block_b256_u8", 256, 256, 1, 8},
        {"block_b128_u4", 128, 128, 1, 4},
        {"block_b128_u8", 128, 128, 1, 8},
        {"block_b256_c", 256, 256, 1, 1, true},
        {"block_b256_u4_c", 256, 256, 1, 4, true},
        {"block_b256_u4_cw", 256, 256, 1, 4, true, true},
        {"block_b256_u16_cw", 256, 256, 1, 16, true, true},
        {"block_b256_r", 256, 256, 1, 1, false, false, true},
        {"block_b256_rw", 256, 256, 1, 1, false, true, true},
        {"block_b512_rw2", 512, 256, 1, 1, false, true, true, 2},
        {"vec2_b128", 128, 128, 1, 1, false, false, false, 1, 2},
        {"vec2_b128_w", 128, 128, 1, 1, false, true, false, 1, 2},
        {"vec4_b64_w", 64, 64, 1, 1, false, true, false, 1, 4},
        {"block_b256_rw_k", 256, 256, 1, 1, false, true, true, 1, 0, true},
        {"block_b512_rw2_k", 512, 256, 1, 1, false, true, true, 2, 0, true},
        {"vec2_b128_k", 128, 128, 1, 1, false, false, false, 1, 2, true},
        {"vec2_b128_wk", 128, 128, 1, 1, false, true, false, 1, 2, true},
    };
    return variants;
}

const RmsNormSchedule& rms_norm_variant(const std::string& name) {
    for (const auto& s : rms_norm_variants())
        if (s.name == name) return s;
    std::vector<std::string> names;
    for (const auto& s : rms_norm_variants()) names.push_back(s.name);
    fail("rms_norm: no variant named '{}'; the variants are {}", name, fmt::join(names, ", "));
}

ir::Kernel rms_norm_kernel(DType type, int64_t n, const RmsNormSchedule& s) {
    if (!is_input_float(type)) fail("rms_norm: dtype {}; expected f32, f16 or bf16", name(type));
    if (n < 1 || n > INT32_MAX) fail("rms_norm: n = {}; expected 1 to {}", n, INT32_MAX);
    check_schedule(s);
    if (s.vector_lanes != 0 && !uses_vector_lanes(type, n, s)) {
        RmsNormSchedule plain = s;
        plain.vector_lanes = 0;
        plain.prefetch_w = s.prefetch_w && s.block == s.threads;
        return rms_norm_kernel(type, n, plain);
    }
    const int N = static_cast<int>(n), T = s.threads, R = s.rows_per_thread, L = s.lane_threads;
    KernelBuilder k(fmt::format("rms_norm_{}", name(type)), s.block);
    auto x = k.input("x", type);
    auto w = k.input("w", type);
    auto out = k.output("out", type);
    Expr eps = k.scalar("eps", DType::f32);
    k.require(w.len() == N, fmt::format("w holds n = {} elements", N));
    k.require(x.len() == out.len(), "out is as long as x");
    k.require(x.len() >= N && x.len() % N == 0, fmt::format("x holds one or more rows of {}", N));
    k.require(eps >= 0.0f && eps <= 3.4028234663852886e38, "eps is finite and >= 0");
    // keep_x: x's lines kept, and w's where w is loaded before the fold (every row reads w).
    // Kept loads are not read-only loads to CUDA's assembler, so it keeps w's early loads in
    // flight beside x's instead of sinking them past the fold's barrier to their use (where a
    // plain w load takes an L2 round trip after the tree). Where w is loaded in the normalize
    // pass, between the stores, kept loads would wait for each store: w stays plain there.
    if (s.keep_x) {
        k.keep_cached(x);
        if (s.prefetch_w) k.keep_cached(w);
    }
    if (s.vector_lanes != 0) {
        vector_lanes_body(k, static_cast<int>(n), s, x, w, out, eps);
        return k.finish();
    }

    Fold fold = rms_norm_fold(n).threads(T);
    fold.spec.unroll = s.unroll;
    Var rows = k.let(out.len() / N, "rows");
    // Thread group `group` (T*L consecutive threads) takes rows group*R ... group*R + R-1; t is
    // this thread's fold lane (its index within its T).
    // T is a power of two and positions are >= 0: shift and mask.
    const int log2_t = std::countr_zero(static_cast<unsigned>(T));
    Var group = k.let(k.absolute_pos() >> std::countr_zero(static_cast<unsigned>(T * L)), "group");
    const Expr t = T == 1 ? Expr(0) : k.let(k.thread_index() & (T - 1), "t").expr();
    // lane_threads > 1: which of the lane's runs of elements this thread holds.
    const Expr run = L == 1 ? Expr(0) : k.let(k.thread_index() >> log2_t, "run").expr();
    k.unroll(0, R, [&](Expr r) {
        Var row = k.let(group * R + r, "row");
        // Clamp instead of branching: every thread of the block reaches the fold's barriers.
        Var base = k.let(min(row.expr(), rows - 1) * N, "base");
        std::optional<Memory> row_cache;
        if (caches_row(type, n, s)) row_cache = k.shared(type, N, "row");
        // The normalize pass is spread over the group: thread t takes i = t, t+T, ...
        // (coalesced), unrolled at comptime when that is at most kNormalizeUnroll elements.
        const int per_lane = static_cast<int>(ceil_div(N, T));
        const int per_thread = static_cast<int>(ceil_div(per_lane, L));
        const bool unrolled = per_thread <= kNormalizeUnroll;
        // This thread's j-th element: lane t's element run*per_thread + j (for L == 1, t + j*T).
        const Expr first = L == 1 ? t : k.let(t + run * (per_thread * T), "first").expr();
        auto nth = [&](int j) { return first + j * T; };
        // Whether step j is inside the row for every thread, known at comptime (else tested).
        const bool runs_whole = N % T == 0 && per_lane % L == 0;
        auto whole = [&](int j) {
            return L == 1 ? (j + 1) * static_cast<int64_t>(T) <= N : runs_whole;
        };
        // nth(j), clamped into the row where step j is ragged (loads past the end are not used).
        auto in_row = [&](int j) { return whole(j) ? nth(j) : min(nth(j), Expr(N - 1)); };
        std::vector<Expr> w_early;  // w[nth(j)], loaded before the fold (clamped in range)
        if (s.prefetch_w && unrolled)
            for (int j = 0; j < per_thread; ++j)
                w_early.push_back(k.let(to_f32(w[in_row(j)]), "w_early"));
        // Row in registers: thread t is lane t of the canonical fold (T == kLanes, chunk 1), so
        // it loads its elements t, t+T, ... once, sums their squares in that order from +0 —
        // lane t's sum — and keeps them for the normalize pass. The lanes then go through the
        // fold's tree as a fold of kLanes elements whose element t is lane t's sum
        // (+0 + sum == sum: a sum of squares from +0 is never -0).
        const bool in_registers = s.row_in_registers && T == kLanes && unrolled;
        std::vector<Expr> x_early;  // x[base + nth(j)] as f32, clamped in range
        auto fold_row = [&]() -> Var {
            if (!in_registers)
                return k.fold(DType::f32, N, fold, [&](Expr i) -> Expr {
                    Var raw = k.let(x[base + i], "raw");
                    // Each element is folded by exactly one thread; the fold's barriers publish
                    // the cached row before the normalize pass reads it.
                    if (row_cache) (*row_cache)[i] = raw;
                    Var v = k.let(to_f32(raw), "v");
                    return v * v;
                });
            for (int j = 0; j < per_thread; ++j)
                x_early.push_back(k.let(to_f32(x[base + in_row(j)]), "x_early"));
            Var lane_sum = k.let(DType::f32, 0.0f, "lane_sum");
            auto add_own = [&] {
                for (int j = 0; j < per_thread; ++j) {
                    const Expr& v = x_early[static_cast<size_t>(j)];
                    if (whole(j))
                        lane_sum = lane_sum + v * v;
                    else
                        k.if_(nth(j) < N, [&] { lane_sum = lane_sum + v * v; });
                }
            };
            if (L == 1) {
                add_own();
            } else {
                // The lane's runs in order: run r takes the sum so far from the relay, adds its
                // elements in order and passes the sum on; after the last run every thread of
                // the lane reads the lane's sum (each of the L thread groups then folds the same
                // lanes, so all get the same root).
                auto relay = k.shared(DType::f32, T, "relay");
                for (int stage = 0; stage < L; ++stage) {
                    k.if_(run == stage, [&] {
                        if (stage > 0) lane_sum = relay[t].expr();
                        add_own();
                        relay[t] = lane_sum;
                    });
                    k.barrier();
                }
                lane_sum = relay[t].expr();
            }
            return k.fold(DType::f32, kLanes, rms_norm_fold(n).threads(T),
                          [&](Expr) -> Expr { return lane_sum; });
        };
        Var ss = fold_row();
        Var inv = inverse_rms(k, ss, n, eps);
        k.if_(row < rows, [&] {
            auto normalize = [&](const Expr& i, const Expr& w_i) {
                Expr y =
                    to_f32(row_cache ? (*row_cache)[i].expr() : x[base + i].expr()) * inv * w_i;
                out[base + i] = type == DType::f32 ? y : cast(type, y);
            };
            if (unrolled) {
                // Every load of the pass is independent and in flight at once.
                for (int j = 0; j < per_thread; ++j) {
                    Expr w_j =
                        w_early.empty() ? to_f32(w[nth(j)]) : w_early[static_cast<size_t>(j)];
                    auto store = [&] {
                        if (x_early.empty()) return normalize(nth(j), w_j);
                        Expr y = x_early[static_cast<size_t>(j)] * inv * w_j;
                        out[base + nth(j)] = type == DType::f32 ? y : cast(type, y);
                    };
                    if (whole(j))
                        store();
                    else
                        k.if_(nth(j) < N, store);
                }
            } else {
                auto pass = [&] {
                    k.for_(
                        t, N,
                        [&](Expr i0) {
                            for (int j = 0; j < 4; ++j) {
                                Expr i = i0 + j * T;
                                k.if_(i < N, [&] { normalize(i, to_f32(w[i])); });
                            }
                        },
                        4 * T);
                };
                // With L > 1 thread groups per row, each group folded the whole row: only the
                // first stores it.
                if (L == 1)
                    pass();
                else
                    k.if_(run == 0, pass);
            }
        });
    });
    return k.finish();
}

int64_t rms_norm_grid(int64_t rows, const RmsNormSchedule& s) {
    const int64_t groups = ceil_div(rows, s.rows_per_thread);
    const int64_t groups_per_block = s.block / (s.threads * s.lane_threads);
    return ceil_div(groups, groups_per_block);
}

int64_t rms_norm_check_shape(DType type, int64_t rows, int64_t n) {
    if (n < 1 || n > INT32_MAX) fail("rms_norm: n = {}; expected 1 to {}", n, INT32_MAX);
    if (rows < 0) fail("rms_norm: rows = {}; expected at least 0", rows);
    const auto elements = checked_mul(rows, n);
    const auto bytes =
        elements ? checked_mul(*elements, static_cast<int64_t>(size_of(type))) : std::nullopt;
    if (!bytes)
        fail("rms_norm: rows = {} x n = {} overflows int64 in {} (at most {})", rows, n,
             elements ? "bytes" : "elements", INT64_MAX);
    if (*elements > INT32_MAX)
        fail("rms_norm: rows = {} x n = {} is {} elements; expected at most {}", rows, n, *elements,
             INT32_MAX);
    return *elements;
}

void rms_norm_check(const Buffer& x, const Buffer& w, int64_t n, float eps) {
    if (n < 1 || n > INT32_MAX) fail("rms_norm: n = {}; expected 1 to {}", n, INT32_MAX);
    if (!is_input_float(x.dtype()))
        fail("rms_norm: x is {}; expected f32, f16 or bf16", name(x.dtype()));
    if (w.dtype() != x.dtype())
        fail("rms_norm: w is {} but x is {}; expected the same dtype", name(w.dtype()),
             name(x.dtype()));
    if (x.count() > static_cast<size_t>(INT32_MAX))
        fail("rms_norm: x has {} elements; expected at most {}", x.count(), INT32_MAX);
    if (x.count() % static_cast<size_t>(n) != 0)
        fail("rms_norm: x has {} elements, not a whole number of rows of n = {}", x.count(), n);
    if (w.count() != static_cast<size_t>(n))
        fail("rms_norm: w has {} elements; expected n = {}", w.count(), n);
    if (!std::isfinite(eps) || eps < 0.0f)
        fail("rms_norm: eps = {}; expected a finite value >= 0", eps);
    if (&w.device() != &x.device())
        fail("rms_norm: x lives on {} but w on {}; expected one device", x.device().info().id,
             w.device().info().id);
}

Timed<Buffer> rms_norm_bench(Device& device, const Buffer& x, const Buffer& w, int64_t rows,
                             int64_t n, float eps, const RmsNormSchedule& schedule, int iters) {
    rms_norm_check(x, w, n, eps);
    if (rms_norm_check_shape(x.dtype(), rows, n) != static_cast<int64_t>(x.count()))
        fail("rms_norm: {} rows of n = {} but x has {} elements", rows, n, x.count());
    check_schedule(schedule);
    return launch_timed(device, x, w, rows, n, eps, schedule, iters);
}

Tuned<Buffer> rms_norm_tuned(Device& device, const Buffer& x, const Buffer& w, int64_t n,
                             float eps) {
    rms_norm_check(x, w, n, eps);
    return make_tuned(device, x, w, n, eps);
}

Buffer rms_norm(Device& device, const Buffer& x, const Buffer& w, int64_t n, float eps,
                Tuner& tuner) {
    rms_norm_check(x, w, n, eps);
    if (&x.device() != &device)
        fail("rms_norm: x lives on {}; expected {}", x.device().info().id, device.info().id);
    if (x.count() == 0) return Buffer(device, x.dtype(), 0);
    Tuned<Buffer> tuned = make_tuned(device, x, w, n, eps);
    // A miss benches every variant: build those not compiled yet in one compiler run first.
    const auto winner = tuner.winner(device.info().id, "rms_norm", tuned.full_key());
    bool offered = false;
    for (const auto& s : rms_norm_variants()) offered = offered || (winner && *winner == s.name);
    if (!offered) {
        std::vector<ir::Kernel> kernels;
        for (const auto& s : rms_norm_variants())
            kernels.push_back(memo_kernel(variant_key(x.dtype(), n, s), builder(x.dtype(), n, s)));
        compile_all(device, kernels);  // the memo's compile() calls below then hit memory
    }
    return tuned.run(tuner);
}

}  // namespace kiln::ops
