// matmul's tensor-core class in the DSL: a block's tile staged through shared tiles of input
// pairs, each warp's tile summed by mma.m16n8k16 steps (ir::stmt::Mma) over k in 16s from p = 0.
#include "ops/matmul_tensor_core.hpp"

#include <vector>

#include <fmt/format.h>

#include "ops/contraction.hpp"

namespace kiln::ops {
namespace {

using namespace contraction;

constexpr int kWarp = 32;
// u32 words each row of a pair tile is padded by: with bk 32 its rows lie 20 words apart, so a
// fragment read (8 rows x 4 consecutive pairs) touches each of the 32 banks once.
constexpr int kPairPad = 4;

// Input elements q and q + 1 along k of an operand line as one u32 (q's bits in the low half).
// `element(q)` is the index of the line's element q. Unless `inside` (both below k, known),
// each is read clamped (always in bounds) and zero past k, so a last, padded mma step adds
// exact zeros.
Expr pair_at(const Memory& m, const Expr& q, const Expr& k, bool inside,
             const std::function<Expr(const Expr&)>& element) {
    auto half = [&](const Expr& at) {
        if (inside) return bitcast(DType::u32, m[element(at)]);
        return select(at < k, bitcast(DType::u32, m[element(min(at, k - 1))]),
                      constant(DType::u32, 0));
    };
    return half(q) | (half(q + 1) << 16);
}

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
}

void tensor_core_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                      const MatmulSchedule& s, const MatmulStore& store) {
    check_class(MatmulClass::tensor_core, t.input);
    const int T = s.threads(), bm = s.bm, bn = s.bn, bk = s.bk;
    const int pairs = bk / 2, ld = pairs + kPairPad;
    // A's tile holds bm rows of a step's k pairs, B's bn columns of them (n-major), so a warp
    // reads both fragments' pairs as single words.
    auto a_tile = k.shared(DType::u32, int64_t{bm} * ld, "a_pairs");
    auto b_tile = k.shared(DType::u32, int64_t{bn} * ld, "b_pairs");
    const BlockIndex block = block_index(k, p, s);
    struct {
        Var batch, a_base, b_base, i0, j0;
    } at{block.batch, k.let(p.a_offset + block.batch * p.a_batch, "a_base"),
         k.let(p.b_offset + block.batch * p.b_batch, "b_base"), k.let(block.tile_m * bm, "i0"),
         k.let(block.tile_n * bn, "j0")};
    // Consecutive threads take consecutive pairs along each operand's contiguous dimension.
    const std::vector<TileSlot> a_slots = tile_slots(k, bm * pairs, T, [&](const Expr& e) {
        Var r = k.let(t.a_transposed ? e % bm : e / pairs, "r");
        Var c = k.let(t.a_transposed ? e / bm : e % pairs, "c");
        return TileSlot{k.let(r * ld + c, "a_tile_at"), k.let(min(at.i0 + r, p.m - 1), "a_row"),
                        k.let(c * 2, "q"), std::nullopt};
    });
    const std::vector<TileSlot> b_slots = tile_slots(k, bn * pairs, T, [&](const Expr& e) {
        Var n = k.let(t.b_transposed ? e / pairs : e % bn, "n");
        Var c = k.let(t.b_transposed ? e % pairs : e / bn, "c");
        return TileSlot{k.let(n * ld + c, "b_tile_at"), k.let(min(at.j0 + n, p.n - 1), "b_col"),
                        k.let(c * 2, "q"), std::nullopt};
    });
    std::vector<Var> a_vals, b_vals;
    for (size_t i = 0; i < a_slots.size(); ++i) a_vals.push_back(k.let(DType::u32, 0, "a_pair"));
    for (size_t i = 0; i < b_slots.size(); ++i) b_vals.push_back(k.let(DType::u32, 0, "b_pair"));
    // The step's pairs from p0 on; `inside`: the whole step lies below k.
    auto fetch = [&](const Expr& p0, bool inside) {
        for (size_t i = 0; i < a_slots.size(); ++i)
            a_vals[i] = pair_at(p.a, p0 + a_slots[i].term, p.k, inside, [&](const Expr& q) {
                return element_at(at.a_base, a_slots[i].line, q, p.lda, t.a_transposed);
            });
        for (size_t i = 0; i < b_slots.size(); ++i)
            b_vals[i] = pair_at(p.b, p0 + b_slots[i].term, p.k, inside, [&](const Expr& q) {
                return element_at(at.b_base, q, b_slots[i].line, p.ldb, t.b_transposed);
            });
    };
    auto put = [&] {
        for (size_t i = 0; i < a_slots.size(); ++i) store_slot(k, a_tile, a_slots[i], a_vals[i]);
        for (size_t i = 0; i < b_slots.size(); ++i) store_slot(k, b_tile, b_slots[i], b_vals[i]);
        k.barrier();
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
    // One mma step of 16 terms at pair `pair0` of the tiles, for every 16 x 8 piece of the warp.
    auto step16 = [&](const Expr& pair0) {
        std::vector<std::vector<Expr>> a(static_cast<size_t>(mt)), b(static_cast<size_t>(nt));
        for (int mi = 0; mi < mt; ++mi) {
            Var base = k.let(a_at + mi * 16 * ld + pair0, "a_frag");
            for (int half : {0, 4})
                for (int row : {0, 8 * ld})
                    a[static_cast<size_t>(mi)].push_back(k.let(a_tile[base + row + half], "a"));
        }
        for (int ni = 0; ni < nt; ++ni) {
            Var base = k.let(b_at + ni * 8 * ld + pair0, "b_frag");
            for (int half : {0, 4})
                b[static_cast<size_t>(ni)].push_back(k.let(b_tile[base + half], "b"));
        }
        for (int mi = 0; mi < mt; ++mi)
            for (int ni = 0; ni < nt; ++ni) {
                const auto first = acc.begin() + (mi * nt + ni) * 4;
                k.mma(t.input, a[static_cast<size_t>(mi)], b[static_cast<size_t>(ni)],
                      std::vector<Var>(first, first + 4));
            }
    };
    Var whole = k.let(p.k / bk * bk, "whole");  // terms in whole steps
    fetch(0, false);
    k.for_(
        0, whole,
        [&](Expr p0) {
            put();
            // The next step's loads fly while this one is summed; a whole step's need no clamps.
            k.if_(
                p0 + bk <= p.k - bk, [&] { fetch(p0 + bk, true); }, [&] { fetch(p0 + bk, false); });
            for (int q = 0; q < bk; q += 16) step16(Expr(q / 2));
            k.barrier();  // the step's tiles are read before the next step writes them
        },
        bk);
    k.if_(whole < p.k, [&] {
        put();
        k.for_(0, (p.k - whole + 15) / 16, [&](Expr q16) { step16(q16 * 8); });
    });
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
    auto point = [](int bm, int bn, int wm, int wn) {
        MatmulSchedule s{
            fmt::format("tc{}x{}_k32_w{}x{}", bm, bn, wm, wn), bm, bn, 32, 1, 1, true, true};
        s.wm = wm;
        s.wn = wn;
        return s;
    };
    static const std::vector<MatmulSchedule> variants = {
        point(128, 128, 64, 32), point(128, 256, 64, 64), point(64, 128, 32, 64),
        point(64, 64, 32, 32),   point(32, 32, 16, 16),
    };
    return variants;
}

}  // namespace kiln::ops
