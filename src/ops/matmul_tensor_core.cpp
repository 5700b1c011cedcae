// matmul's tensor-core class in the DSL: a block's tile staged through shared tiles of input
// pairs, each warp's tile summed by mma.m16n8k16 steps (ir::stmt::Mma) over k in 16s from p = 0.
#include "ops/matmul_tensor_core.hpp"

#include <vector>

#include <fmt/format.h>

#include "ops/contraction.hpp"
#include "ops/tensor_core_parts.hpp"

namespace kiln::ops {
namespace {

using namespace contraction;
using namespace tensor_core;

// u32 words each row of a pair tile is padded by: with bk 32 its rows lie 20 words apart, so a
// fragment read (8 rows x 4 consecutive pairs) touches each of the 32 banks once.
constexpr int kPairPad = 4;
// The shared memory a block may declare statically (CUDA's limit without an opt-in).
constexpr int64_t kMaxSharedBytes = 48 * 1024;

}  // namespace

void check_tensor_core_schedule(const MatmulSchedule& s) {
    if (s.wm % 16 != 0 || s.wn % 8 != 0 || s.bm % s.wm != 0 || s.bn % s.wn != 0)
        fail(
            "matmul schedule {}: warp tile {}x{} in block tile {}x{}; expected multiples of 16 x 8 "
            "that divide the block tile",
            s.name, s.wm, s.wn, s.bm, s.bn);
    if (s.bk % 16 != 0 || s.bk > 64)
        fail("matmul schedule {}: bk {}; expected 16, 32, 48 or 64", s.name, s.bk);
    if (s.threads() > 1024)
        fail("matmul schedule {}: {} threads a block; expected at most 1024", s.name, s.threads());
    const int64_t bytes = int64_t{s.bm + s.bn} * (s.bk / 2 + kPairPad) * 4 * s.stages;
    if ((s.stages != 1 && s.stages != 2) || bytes > kMaxSharedBytes)
        fail(
            "matmul schedule {}: {} stages of shared tiles, {} bytes; expected 1 or 2 stages in "
            "at most {} bytes",
            s.name, s.stages, bytes, kMaxSharedBytes);
}

void tensor_core_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                      const MatmulSchedule& s, const MatmulStore& store) {
    auto operand = [](const ElementRead& read, const Expr& offset, const Expr& batch_stride,
                      const Expr& ld, bool transposed, bool rows) {
        // A's lines are its rows (element (line, q)), B's its columns (element (q, line)).
        return TensorCoreOperand{read, transposed != rows,
                                 [=](const Expr& batch) { return offset + batch * batch_stride; },
                                 [=](const Expr& base, const Expr& line, const Expr& q) {
                                     return rows ? element_at(base, line, q, ld, transposed)
                                                 : element_at(base, q, line, ld, transposed);
                                 }};
    };
    tensor_core_product(
        k,
        {operand(p.a, p.a_offset, p.a_batch, p.lda, t.a_transposed, true),
         operand(p.b, p.b_offset, p.b_batch, p.ldb, t.b_transposed, false), p.m, p.n, p.k},
        t.input, s, store);
}

void tensor_core_product(KernelBuilder& k, const TensorCoreProduct& p, DType input,
                         const MatmulSchedule& s, const MatmulStore& store) {
    check_class(MatmulClass::tensor_core, input);
    const int T = s.threads(), bm = s.bm, bn = s.bn, bk = s.bk;
    const int pairs = bk / 2, ld = pairs + kPairPad;
    // A's tile holds bm rows of a step's k pairs, B's bn columns of them (n-major), so a warp
    // reads both fragments' pairs as single words.
    const int a_size = bm * ld, b_size = bn * ld;  // one stage's tiles
    auto a_tile = k.shared(DType::u32, int64_t{a_size} * s.stages, "a_pairs");
    auto b_tile = k.shared(DType::u32, int64_t{b_size} * s.stages, "b_pairs");
    const BlockIndex block = block_index(k, p.m, p.n, s);
    struct {
        Var batch, a_base, b_base, i0, j0;
    } at{block.batch, k.let(p.a.base_of(block.batch), "a_base"),
         k.let(p.b.base_of(block.batch), "b_base"), k.let(block.tile_m * bm, "i0"),
         k.let(block.tile_n * bn, "j0")};
    // Each operand's share of a step's pairs; A's lines are rows of C, B's columns.
    Staging a = stage_operand(
        k, {p.a.read, bm, pairs, ld, p.a.k_contiguous, T,
            [&](const Expr& line) { return min(at.i0 + line, p.m - 1); }, bool(p.a.present)});
    Staging b = stage_operand(
        k, {p.b.read, bn, pairs, ld, p.b.k_contiguous, T,
            [&](const Expr& line) { return min(at.j0 + line, p.n - 1); }, bool(p.b.present)});
    auto a_element = [&](const Expr& row, const Expr& q) { return p.a.index(at.a_base, row, q); };
    auto b_element = [&](const Expr& col, const Expr& q) { return p.b.index(at.b_base, col, q); };
    // The step's pairs from p0 on; `inside`: the whole step lies below k.
    auto fetch = [&](const Expr& p0, bool inside) {
        a.fetch(k, p0, p.k, inside, a_element, p.a.present);
        b.fetch(k, p0, p.k, inside, b_element, p.b.present);
    };
    // The fetched pairs into the tiles of stage `stage` (the caller then waits at a barrier).
    auto put = [&](const Expr& stage) {
        a.put(k, a_tile, s.stages == 1 ? Expr(0) : stage * a_size);
        b.put(k, b_tile, s.stages == 1 ? Expr(0) : stage * b_size);
    };

    // The warp's tile and the lane's place in the mma fragments (g = lane / 4, tq = lane % 4).
    Var thread = k.let(k.thread_index(), "t");
    Var warp = k.let(thread / kWarp, "warp");
    Var lane = k.let(thread % kWarp, "lane");
    Var g = k.let(lane / 4, "g");
    Var tq = k.let(lane % 4, "tq");
    const int warps_n = bn / s.wn, mt = s.wm / 16, nt = s.wn / 8;
    Var wy = k.let(warp / warps_n, "wy");
    Var wx = k.let(warp % warps_n, "wx");
    std::vector<Var> acc;
    for (int i = 0; i < mt * nt * 4; ++i) acc.push_back(k.let(DType::f32, 0.0f, "acc"));
    Var a_at = k.let((wy * s.wm + g) * ld + tq, "a_at");
    Var b_at = k.let((wx * s.wn + g) * ld + tq, "b_at");
    // One mma step of 16 terms at pair `pair0` of stage `stage`'s tiles, for every 16 x 8 piece
    // of the warp.
    auto step16 = [&](const Expr& stage, const Expr& pair0) {
        std::vector<std::vector<Expr>> a(static_cast<size_t>(mt)), b(static_cast<size_t>(nt));
        const Expr a_stage = s.stages == 1 ? Expr(0) : stage * a_size;
        const Expr b_stage = s.stages == 1 ? Expr(0) : stage * b_size;
        for (int mi = 0; mi < mt; ++mi) {
            Var base = k.let(a_at + mi * 16 * ld + pair0 + a_stage, "a_frag");
            for (int half : {0, 4})
                for (int row : {0, 8 * ld})
                    a[static_cast<size_t>(mi)].push_back(k.let(a_tile[base + row + half], "a"));
        }
        for (int ni = 0; ni < nt; ++ni) {
            Var base = k.let(b_at + ni * 8 * ld + pair0 + b_stage, "b_frag");
            for (int half : {0, 4})
                b[static_cast<size_t>(ni)].push_back(k.let(b_tile[base + half], "b"));
        }
        for (int mi = 0; mi < mt; ++mi)
            for (int ni = 0; ni < nt; ++ni) {
                const auto first = acc.begin() + (mi * nt + ni) * 4;
                k.mma(input, a[static_cast<size_t>(mi)], b[static_cast<size_t>(ni)],
                      std::vector<Var>(first, first + 4));
            }
    };
    Var whole = k.let(p.k / bk * bk, "whole");  // terms in whole steps
    // The next step's loads fly while this one is summed; a whole step's need no clamps.
    auto fetch_next = [&](const Expr& p0) {
        k.if_(
            p0 + bk <= p.k - bk, [&] { fetch(p0 + bk, true); }, [&] { fetch(p0 + bk, false); });
    };
    auto sum_step = [&](const Expr& stage) {
        for (int q = 0; q < bk; q += 16) step16(stage, Expr(q / 2));
    };
    // The last, short step's terms in mma steps of 16 (the last zero-padded).
    auto sum_short_step = [&](const Expr& stage) {
        k.for_(0, (p.k - whole + 15) / 16, [&](Expr q16) { step16(stage, q16 * 8); });
    };
    fetch(0, false);
    if (s.stages == 1) {
        k.for_(
            0, whole,
            [&](Expr p0) {
                put(0);
                k.barrier();
                fetch_next(p0);
                sum_step(0);
                k.barrier();  // the step's tiles are read before the next step writes them
            },
            bk);
        k.if_(whole < p.k, [&] {
            put(0);
            k.barrier();
            sum_short_step(0);
        });
    } else {
        // Step i's pairs in stage i % 2: while a step is summed from one stage, the next step's
        // are stored into the other, which every thread finished reading before the last
        // barrier.
        put(0);
        k.barrier();
        k.for_(
            0, whole,
            [&](Expr p0) {
                Var stage = k.let(p0 / bk % 2, "stage");
                fetch_next(p0);
                sum_step(stage);
                put(1 - stage);
                k.barrier();
            },
            bk);
        k.if_(whole < p.k, [&] { sum_short_step(whole / bk % 2); });
    }
    for (int mi = 0; mi < mt; ++mi)
        for (int ni = 0; ni < nt; ++ni)
            for (int i = 0; i < 4; ++i) {
                Var row = k.let(at.i0 + wy * s.wm + mi * 16 + g + (i >= 2 ? 8 : 0), "row");
                Var col = k.let(at.j0 + wx * s.wn + ni * 8 + tq * 2 + (i & 1), "col");
                const Expr v = acc[static_cast<size_t>((mi * nt + ni) * 4 + i)];
                k.if_(row < p.m && col < p.n, [&] { store(at.batch, row, col, v); });
            }
}

const std::vector<MatmulSchedule>& matmul_tensor_core_variants() {
    auto point = [](int bm, int bn, int wm, int wn, int bk = 32, int stages = 1) {
        MatmulSchedule s{
            fmt::format("tc{}x{}_k{}_w{}x{}{}", bm, bn, bk, wm, wn, stages == 2 ? "_s2" : ""),
            bm,
            bn,
            bk,
            1,
            1,
            true,
            true};
        s.wm = wm;
        s.wn = wn;
        s.stages = stages;
        return s;
    };
    static const std::vector<MatmulSchedule> variants = {
        point(128, 128, 64, 32),       point(128, 256, 64, 64),      point(64, 128, 32, 64),
        point(64, 64, 32, 32),         point(32, 32, 16, 16),        point(128, 128, 64, 32, 32, 2),
        point(64, 128, 32, 64, 32, 2), point(64, 64, 32, 32, 32, 2), point(128, 256, 64, 64, 16, 2),
        point(16, 32, 16, 8),          point(16, 16, 16, 8),         point(256, 128, 64, 64),
    };
    return variants;
}

}  // namespace kiln::ops
