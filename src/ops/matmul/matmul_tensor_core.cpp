// matmul's tensor-core class in the DSL: a block's tile staged through shared tiles (of input
// pairs, or k-major), in 1 to 4 stages of asynchronous copies, each warp's fragments read by
// ldmatrix and its tile summed by mma.m16n8k16 steps (ir::stmt::Mma) over k in 16s from p = 0.
#include "ops/matmul/matmul_tensor_core.hpp"

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
    // Words of one stage of an operand's tile: pairs, or with stages k-major (whichever is
    // larger, as the layout depends on the operand).
    auto stage_words = [&](int lines) {
        const int64_t pairs = int64_t{lines} * (s.bk / 2 + kPairPad);
        return s.stages == 1 ? pairs : std::max<int64_t>(pairs, int64_t{s.bk} * k_major_ld(lines));
    };
    const int64_t bytes = (stage_words(s.bm) + stage_words(s.bn)) * 4 * s.stages;
    if (s.stages < 1 || s.stages > 4 || bytes > kMaxSharedBytes)
        fail(
            "matmul schedule {}: {} stages of shared tiles, {} bytes; expected 1 to 4 stages in "
            "at most {} bytes",
            s.name, s.stages, bytes, kMaxSharedBytes);
}

void tensor_core_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                      const MatmulSchedule& s, const MatmulStore& store) {
    auto operand = [](const ElementRead& read, const Expr& offset, const Expr& batch_stride,
                      const Expr& ld, bool transposed, bool rows) {
        // A's lines are its rows (element (line, q)), B's its columns (element (q, line)).
        return TensorCoreOperand{read,
                                 transposed != rows,
                                 [=](const Expr& batch) { return offset + batch * batch_stride; },
                                 [=](const Expr& base, const Expr& line, const Expr& q) {
                                     return rows ? element_at(base, line, q, ld, transposed)
                                                 : element_at(base, q, line, ld, transposed);
                                 },
                                 {},
                                 transposed == rows};
    };
    tensor_core_product(
        k,
        {operand(p.a, p.a_offset, p.a_batch, p.lda, t.a_transposed, true),
         operand(p.b, p.b_offset, p.b_batch, p.ldb, t.b_transposed, false), p.m, p.n, p.k},
        t.input, s, store);
}

namespace {

// One operand's staging: a pair tile (its lines' pairs, through registers or, where 16 bytes of
// a buffer, copied), or with stages a k-major tile of an operand whose lines are adjacent.
struct StagedOperand {
    const TensorCoreOperand& op;
    Var base, first;  // the batch's base; the block's first line (a row of C, or a column)
    Expr count;       // the operand's lines (m or n)
    int size;         // words of one stage
    Memory tile;
    std::optional<tensor_core::Staging> pairs;
    std::optional<tensor_core::KMajorStaging> rows;

    Expr element(const Expr& line, const Expr& q) const { return op.index(base, line, q); }
    Staging::LineElement elements() const {
        return [this](const Expr& line, const Expr& q) { return element(line, q); };
    }
    bool copied() const { return rows || pairs->width == 4; }
    // The pairs of the step from p0 into registers, and from there into stage `stage`.
    void fetch(KernelBuilder& k, const Expr& p0, const Expr& terms, bool inside) {
        if (pairs) pairs->fetch(k, p0, terms, inside, elements(), op.present);
    }
    void put(KernelBuilder& k, const Expr& stage) const {
        if (pairs) pairs->put(k, tile, stage * size);
    }
    // A whole step from p0 copied into stage `stage`.
    void copy(KernelBuilder& k, const Expr& p0, const Expr& terms, const Expr& stage) const {
        if (rows)
            rows->issue(k, p0, terms, true, first, count, elements(), tile, stage * size);
        else
            pairs->copy(k, p0, tile, stage * size, elements());
    }
};

}  // namespace

void tensor_core_product(KernelBuilder& k, const TensorCoreProduct& p, DType input,
                         const MatmulSchedule& s, const MatmulStore& store) {
    check_class(MatmulClass::tensor_core, input);
    const int T = s.threads(), bm = s.bm, bn = s.bn, bk = s.bk, S = s.stages;
    const int pairs = bk / 2, ld = pairs + kPairPad;
    const BlockIndex block = block_index(k, std::nullopt, p.m, p.n, s);
    // A's pair tile holds bm rows of a step's k pairs, B's bn columns of them (n-major), so a
    // warp reads both fragments' pairs as single words; a k-major tile holds bk rows of the
    // lines' elements. A's lines are rows of C, B's columns.
    auto staged = [&](const TensorCoreOperand& op, int lines, const Expr& first_line,
                      const Expr& count, const char* name) {
        const bool k_major = S > 1 && op.read.buffer && op.lines_contiguous && !op.present;
        const int size = k_major ? bk * k_major_ld(lines) : lines * ld;
        StagedOperand o{op,
                        k.let(op.base_of(block.batch), fmt::format("{}_base", name)),
                        k.let(first_line * lines, fmt::format("{}_first", name)),
                        count,
                        size,
                        k.shared(DType::u32, int64_t{size} * S, fmt::format("{}_tile", name)),
                        std::nullopt,
                        std::nullopt};
        if (k_major)
            o.rows = stage_k_major(k, op.read, lines, bk, T);
        else
            o.pairs = stage_operand(
                k, {op.read, lines, pairs, ld, op.k_contiguous, T,
                    [&o](const Expr& line) { return min(o.first + line, o.count - 1); },
                    bool(op.present)});
        return o;
    };
    StagedOperand a = staged(p.a, bm, block.tile_m, p.m, "a");
    StagedOperand b = staged(p.b, bn, block.tile_n, p.n, "b");
    auto fetch = [&](const Expr& p0, bool inside) {
        a.fetch(k, p0, p.k, inside);
        b.fetch(k, p0, p.k, inside);
    };
    // The fetched pairs into the tiles of stage `stage` (the caller then waits at a barrier).
    auto put = [&](const Expr& stage) {
        a.put(k, stage);
        b.put(k, stage);
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
    // The row each lane gives the warp's ldmatrix (matrix j = lane / 8, its row lane % 8). In a
    // pair tile A's four matrices of a 16 x 16 piece are rows 0-7 and 8-15 of pairs 0-3, then
    // of pairs 4-7 (fragments a0..a3); B's x4 covers two 8-column pieces (b0, b1 of each), its
    // x2 one. In a k-major tile (ldmatrix.trans) the matrices are 8 terms x 8 lines: A's are
    // lines 0-7 and 8-15 of terms 0-7, then of terms 8-15; B's terms 0-7 and 8-15 of each piece.
    Var r8 = k.let(lane % 8, "r8");
    Var j1 = k.let(lane / 8 % 2, "j1");
    Var j2 = k.let(lane / 16, "j2");
    const int a_ld = k_major_ld(bm), b_ld = k_major_ld(bn);  // k-major rows
    Var a_row = a.rows ? k.let((r8 + j2 * 8) * a_ld + wy * (s.wm / 2) + j1 * 4, "a_row")
                       : k.let((wy * s.wm + r8 + j1 * 8) * ld + j2 * 4, "a_row");
    Var b_row = b.rows ? k.let((r8 + j1 * 8) * b_ld + wx * (s.wn / 2) + j2 * 4, "b_row")
                       : k.let((wx * s.wn + r8 + j2 * 8) * ld + j1 * 4, "b_row");
    Var b_row2 = b.rows ? b_row : k.let((wx * s.wn + r8) * ld + j1 * 4, "b_row2");
    // One mma step of 16 terms at pair `pair0` of stage `stage`'s tiles, for every 16 x 8 piece
    // of the warp.
    auto step16 = [&](const Expr& stage, const Expr& pair0) {
        std::vector<std::vector<Var>> a_frags, b_frags;
        const Expr a_at = a.rows ? pair0 * (2 * a_ld) : pair0;
        const Expr b_at = b.rows ? pair0 * (2 * b_ld) : pair0;
        for (int mi = 0; mi < mt; ++mi)
            a_frags.push_back(k.load_matrix(
                a.tile, a_row + (a.rows ? mi * 8 : mi * 16 * ld) + a_at + stage * a.size, 4, "a",
                bool(a.rows)));
        for (int ni = 0; ni < nt; ni += 2) {
            const bool pair = ni + 1 < nt;
            const std::vector<Var> words = k.load_matrix(
                b.tile,
                (pair ? b_row : b_row2) + (b.rows ? ni * 4 : ni * 8 * ld) + b_at + stage * b.size,
                pair ? 4 : 2, "b", bool(b.rows));
            b_frags.push_back({words[0], words[1]});
            if (pair) b_frags.push_back({words[2], words[3]});
        }
        for (int mi = 0; mi < mt; ++mi)
            for (int ni = 0; ni < nt; ++ni) {
                const auto first = acc.begin() + (mi * nt + ni) * 4;
                const auto& av = a_frags[static_cast<size_t>(mi)];
                const auto& bv = b_frags[static_cast<size_t>(ni)];
                k.mma(input, std::vector<Expr>(av.begin(), av.end()),
                      std::vector<Expr>(bv.begin(), bv.end()), std::vector<Var>(first, first + 4));
            }
    };
    Var whole = k.let(p.k / bk * bk, "whole");  // terms in whole steps
    auto sum_step = [&](const Expr& stage) {
        for (int q = 0; q < bk; q += 16) step16(stage, Expr(q / 2));
    };
    // The last, short step's terms in mma steps of 16 (the last zero-padded).
    auto sum_short_step = [&](const Expr& stage) {
        k.for_(0, (p.k - whole + 15) / 16, [&](Expr q16) { step16(stage, q16 * 8); });
    };
    if (S == 1) {
        // The next step's loads fly while this one is summed; a whole step's need no clamps.
        auto fetch_next = [&](const Expr& p0) {
            k.if_(
                p0 + bk <= p.k - bk, [&] { fetch(p0 + bk, true); }, [&] { fetch(p0 + bk, false); });
        };
        fetch(0, false);
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
        // Whole steps through the stages (staged_steps): a copied operand goes straight into
        // its stage (asynchronously on CUDA), the other is fetched before the step is summed
        // and put after. The short step is read element by element after the loop.
        auto issue = [&](const Expr& p0, const Expr& stage) {
            for (StagedOperand* o : {&a, &b})
                if (o->copied())
                    o->copy(k, p0, p.k, stage);
                else
                    o->fetch(k, p0, p.k, true);
        };
        auto put_fetched = [&](const Expr& stage) {
            for (StagedOperand* o : {&a, &b})
                if (!o->copied()) o->put(k, stage);
        };
        staged_steps(
            k, S, whole, bk, issue, [&](const Expr&, const Expr& stage) { sum_step(stage); },
            put_fetched);
        k.if_(whole < p.k, [&] {
            Var stage = k.let(whole / bk % S, "last_stage");
            for (StagedOperand* o : {&a, &b}) {
                if (o->rows)
                    o->rows->issue(k, whole, p.k, false, o->first, o->count, o->elements(), o->tile,
                                   stage * o->size);
                o->fetch(k, whole, p.k, false);
                o->put(k, stage);
            }
            k.barrier();
            sum_short_step(stage);
        });
    }
    for (int mi = 0; mi < mt; ++mi)
        for (int ni = 0; ni < nt; ++ni)
            for (int i = 0; i < 4; ++i) {
                Var row = k.let(a.first + wy * s.wm + mi * 16 + g + (i >= 2 ? 8 : 0), "row");
                Var col = k.let(b.first + wx * s.wn + ni * 8 + tq * 2 + (i & 1), "col");
                const Expr v = acc[static_cast<size_t>((mi * nt + ni) * 4 + i)];
                k.if_(row < p.m && col < p.n, [&] { store(block.batch, row, col, v); });
            }
}

const std::vector<MatmulSchedule>& matmul_tensor_core_variants() {
    auto point = [](int bm, int bn, int wm, int wn, int bk = 32, int stages = 1) {
        MatmulSchedule s{fmt::format("tc{}x{}_k{}_w{}x{}{}", bm, bn, bk, wm, wn,
                                     stages > 1 ? fmt::format("_s{}", stages) : ""),
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
        point(128, 128, 64, 32),        point(128, 256, 64, 64),
        point(64, 128, 32, 64),         point(64, 64, 32, 32),
        point(32, 32, 16, 16),          point(128, 128, 64, 32, 32, 2),
        point(64, 128, 32, 64, 32, 3),  point(64, 64, 32, 32, 32, 4),
        point(128, 128, 64, 32, 16, 4), point(128, 256, 64, 64, 16, 2),
        point(256, 128, 64, 64, 16, 2), point(16, 32, 16, 8),
        point(16, 16, 16, 8),           point(256, 128, 64, 64),
    };
    return variants;
}

}  // namespace kiln::ops
