// conv1d in the DSL: one kernel source, monomorphized per dtypes and schedule.
#include "ops/conv1d/conv1d.hpp"
#include "ops/class_domain.hpp"

#include "base/ceil_div.hpp"
#include "ops/contraction.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/matmul/matmul.hpp"
#include "ops/matmul/matmul_tensor_core.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/compile.hpp"

namespace kiln::ops {
namespace {

using namespace contraction;

// A tensor-core point as matmul's (its implicit GEMM runs matmul's tensor-core kernel).
MatmulSchedule as_matmul(const Conv1dSchedule& s) {
    MatmulSchedule m{s.name, s.bm, s.bn, s.bk, 1, 1, true, true};
    m.wm = s.wm;
    m.wn = s.wn;
    return m;
}

void check_schedule(const Conv1dSchedule& s) {
    check_exact_knobs("conv1d", s.name, s.tensor_core(), s.totals_in_memory, s.min_blocks);
    if (s.tensor_core()) return check_tensor_core_schedule(as_matmul(s));
    check_min_blocks("conv1d", s.name, s.min_blocks, s.threads());
    check_tiles("conv1d", s.name, s.bm, s.bn, s.tm, s.tn);
    if (!s.staged && !s.spread && s.tn != 1)
        fail("conv1d schedule {}: a direct point with {} positions a thread; expected 1", s.name,
             s.tn);
    if (s.spread && s.staged)
        fail("conv1d schedule {}: spread positions with shared tiles; expected a direct point",
             s.name);
    if (s.staged) check_step("conv1d", s.name, s.bk);
}

void check_types(const Conv1dTypes& t) {
    contraction::check_types("conv1d", t.input, t.output);
}

// The kernel's parameters, in launch order: x, w and the sizes as conv1d_body reads them, then y
// and its view.
struct Params : Conv1dViews {
    Memory x_buffer, w_buffer, y;
    Expr y_offset, y_batch, y_channel;
};

Params declare_params(KernelBuilder& k, const Conv1dTypes& t) {
    Memory x = k.input("x", t.input);
    Memory w = k.input("w", t.input);
    Memory y = k.output("y", t.output);
    auto i32 = [&](const char* n) { return k.scalar(n, DType::i32); };
    Expr batch = i32("batch"), c_in = i32("in_channels"), length = i32("length");
    Expr c_out = i32("out_channels"), kernel = i32("kernel"), stride = i32("stride");
    Expr padding = i32("padding"), dilation = i32("dilation"), groups = i32("groups");
    Expr x_offset = i32("x_offset"), x_batch = i32("x_batch"), x_channel = i32("x_channel");
    Expr y_offset = i32("y_offset"), y_batch = i32("y_batch"), y_channel = i32("y_channel");
    return {{buffer_elements(x), buffer_elements(w), batch, c_in, length, c_out, kernel, stride,
             padding, dilation, groups, x_offset, x_batch, x_channel},
            x,
            w,
            y,
            y_offset,
            y_batch,
            y_channel};
}

// The launch contract, in i64: sizes >= 1, padding >= 0, groups dividing the channels, the
// kernel inside the padded input, lengths and channels that keep every index in 32 bits, no
// negative offset or stride, x's and y's views and w inside their buffers, y's channels and
// batches apart so no two outputs share an element.
void require_contract(KernelBuilder& k, const Params& p) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    k.require(p.batch >= 1 && p.c_in >= 1 && p.length >= 1 && p.c_out >= 1 && p.kernel >= 1,
              "batch, in_channels, length, out_channels and kernel are >= 1");
    k.require(p.stride >= 1 && p.dilation >= 1 && p.groups >= 1 && p.padding >= 0,
              "stride, dilation and groups are >= 1, padding >= 0");
    k.require(p.c_in % p.groups == 0 && p.c_out % p.groups == 0,
              "groups divides in_channels and out_channels");
    const Expr padded = wide(p.length) + 2 * wide(p.padding);
    k.require(padded <= kMaxIndex, fmt::format("length + 2*padding is at most {}", kMaxIndex));
    const Expr span = wide(p.dilation) * (wide(p.kernel) - 1) + 1;
    k.require(span <= padded, "dilation*(kernel-1) + 1 is at most length + 2*padding");
    const Expr l_out = (padded - span) / wide(p.stride) + 1;
    k.require(l_out <= kMaxExtent && wide(p.c_out) <= kMaxExtent,
              fmt::format("l_out and out_channels are at most {}", kMaxExtent));
    k.require(p.x_offset >= 0 && p.x_batch >= 0 && p.x_channel >= 0 && p.y_offset >= 0 &&
                  p.y_batch >= 0 && p.y_channel >= 0,
              "offsets and strides are >= 0");
    k.require(wide(p.x_offset) + (wide(p.batch) - 1) * wide(p.x_batch) +
                      (wide(p.c_in) - 1) * wide(p.x_channel) + wide(p.length) - 1 <
                  wide(p.x_buffer.len()),
              "x's view (batch x in_channels x length) lies inside x");
    k.require(wide(p.c_out) * wide(p.c_in / p.groups) * wide(p.kernel) <= wide(p.w_buffer.len()),
              "w holds out_channels x in_channels/groups x kernel");
    k.require(wide(p.y_offset) + (wide(p.batch) - 1) * wide(p.y_batch) +
                      (wide(p.c_out) - 1) * wide(p.y_channel) + l_out - 1 <
                  wide(p.y.len()),
              "y's view (batch x out_channels x l_out) lies inside y");
    k.require(
        wide(p.y_channel) >= l_out &&
            (p.batch == 1 || wide(p.y_batch) >= (wide(p.c_out) - 1) * wide(p.y_channel) + l_out),
        "y's channels and batches do not overlap (y_channel >= l_out, y_batch >= "
        "(out_channels-1)*y_channel + l_out)");
}

// y's length, (length + 2*padding - dilation*(kernel-1) - 1) / stride + 1 (the launch contract
// keeps it >= 1).
Expr out_length(const Conv1dViews& p) {
    return (p.length + 2 * p.padding - p.dilation * (p.kernel - 1) - 1) / p.stride + 1;
}

// Where a thread works: the sizes derived from the parameters, its block's group, first output
// channel and position, the bases of its batch in x and y, and its place in the block tile.
struct Place {
    Expr cg, terms, l_out;   // channels per group, terms per output (cg*kernel), y's length
    Expr oc0, oc_last, t0;   // the block tile's first channel and position; its group's last
    Expr n, x_base, ty, tx;  // the block's batch, the index of x's (n, g*cg, 0)
    // The block tile's column of the thread's c-th position: side by side, or bn/tn apart if
    // spread.
    Expr column(const Conv1dSchedule& s, int c) const {
        return s.spread ? tx + c * (s.bn / s.tn) : tx * s.tn + c;
    }
    // The same in i64, the thread's index widened first: adjacent threads' columns visibly
    // adjacent (to the C++ compiler, which keeps the i32 sum's wrap).
    Expr wide_column(const Conv1dSchedule& s, int c) const {
        const Expr t = cast(DType::i64, tx);
        return s.spread ? t + int64_t{c * (s.bn / s.tn)} : t * int64_t{s.tn} + int64_t{c};
    }
};

Place place(KernelBuilder& k, const Conv1dViews& p, const Conv1dSchedule& s) {
    Var cg = k.let(p.c_in / p.groups, "cg");
    Var og = k.let(p.c_out / p.groups, "og");
    Var l_out = k.let(out_length(p), "l_out");
    Var tiles_t = k.let((l_out + (s.bn - 1)) / s.bn, "tiles_t");
    Var tiles_c = k.let((og + (s.bm - 1)) / s.bm, "tiles_c");
    Var block = k.let(k.block_index(), "block");
    Var tile_t = k.let(block % tiles_t, "tile_t");
    Var rest = k.let(block / tiles_t, "rest");
    Var tile_c = k.let(rest % tiles_c, "tile_c");
    Var batch_group = k.let(rest / tiles_c, "batch_group");
    Var group = k.let(batch_group % p.groups, "group");
    Var n = k.let(batch_group / p.groups, "n");
    const int across = s.bn / s.tn;  // threads along the length of the block tile
    Var t = k.let(k.thread_index(), "t");
    const bool one_row = s.threads() <= across;  // then ty is 0 and tx is t, known as such
    return {cg,
            k.let(cg * p.kernel, "terms"),
            l_out,
            k.let(group * og + tile_c * s.bm, "oc0"),
            k.let(group * og + og - 1, "oc_last"),
            k.let(tile_t * s.bn, "t0"),
            n,
            k.let(p.x_offset + n * p.x_batch + group * cg * p.x_channel, "x_base"),
            one_row ? Expr(0) : Expr(k.let(t / across, "ty")),
            one_row ? Expr(t) : Expr(k.let(t % across, "tx"))};
}

// The position in x of the first tap (r = 0) of the block tile's column `column`: t*stride -
// padding, with t clamped to y's last position (columns past l_out compute values never stored).
Expr first_tap(const Conv1dViews& p, const Place& at, const Expr& column) {
    return min(at.t0 + column, at.l_out - 1) * p.stride - p.padding;
}

// The index in w of row `row` of the block tile (oc*terms), clamped to its group's last channel.
Expr w_row(const Place& at, const Expr& row) {
    return min(at.oc0 + row, at.oc_last) * at.terms;
}

// The terms q = ic*kernel + r chunk by chunk (kiln/ops/contraction_order.hpp): for each chunk,
// body(ic, r_begin, r_end) for each channel it spans with the taps of that channel inside it and
// inside [r_lo, r_hi), then the chunk closed.
void chunked_taps(KernelBuilder& k, const Conv1dViews& p, const Place& at, Accumulators& acc,
                  const Expr& r_lo, const Expr& r_hi,
                  const std::function<void(Expr, Expr, Expr)>& body) {
    k.for_(
        0, at.terms,
        [&](Expr c0) {
            Var c1 = k.let(min(c0 + kChunkTerms, at.terms), "c1");
            k.for_(c0 / p.kernel, (c1 - 1) / p.kernel + 1, [&](Expr ic) {
                Var first = k.let(ic * p.kernel, "first");
                body(ic, max(r_lo, c0 - first), min(r_hi, c1 - first));
            });
            acc.close_chunk();
        },
        kChunkTerms);
}

// The direct form (tn = 1): the thread's position reads only its taps inside x, r from r_lo to
// r_hi, so no tap is tested; w's tm rows and x's tap are read from memory for each term.
void direct_terms(KernelBuilder& k, const Conv1dViews& p, const Place& at, const Conv1dSchedule& s,
                  Accumulators& acc) {
    Var start = k.let(first_tap(p, at, at.tx), "start");
    // The first r with start + r*dilation >= 0, and one past the last with it < length
    // (length - 1 - start >= 0 whenever the kernel fits the padded input).
    Var r_lo = k.let(select(start >= 0, Expr(0), (-start - 1) / p.dilation + 1), "r_lo");
    Var r_hi = k.let(min(p.kernel, (p.length - 1 - start) / p.dilation + 1), "r_hi");
    std::vector<Var> rows;
    for (int r = 0; r < s.tm; ++r) rows.push_back(k.let(w_row(at, at.ty * s.tm + r), "w_row"));
    chunked_taps(k, p, at, acc, r_lo, r_hi, [&](Expr ic, Expr r_begin, Expr r_end) {
        Var x_at = k.let(at.x_base + ic * p.x_channel + start, "x_at");
        Var w_at = k.let(ic * p.kernel, "w_at");
        k.for_(r_begin, r_end, [&](Expr r) {
            std::vector<Expr> wv;
            for (const Var& row : rows) wv.push_back(k.let(to_f32(p.w(row + w_at + r)), "w"));
            acc.add_term(wv, {k.let(to_f32(p.x(x_at + r * p.dilation)), "x")});
        });
    });
}

// The terms q = ic*kernel + r in order, chunk by chunk as chunked_taps, in one loop over q (no
// loop nest over ic and r, whose bounds cost more than a tap of a few channels): body(q, r,
// x_at) with x_at = ic*x_channel + r*dilation in i64, both kept up to date as q advances.
void flat_taps(KernelBuilder& k, const Conv1dViews& p, const Place& at, Accumulators& acc,
               const std::function<void(Expr, Expr, Expr)>& body) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    Var channel_step =
        k.let(wide(p.x_channel) - (wide(p.kernel) - 1) * wide(p.dilation), "channel_step");
    k.for_(
        0, at.terms,
        [&](Expr c0) {
            Var c1 = k.let(min(c0 + kChunkTerms, at.terms), "c1");
            Var ic = k.let(c0 / p.kernel, "ic");
            Var r = k.let(c0 - ic * p.kernel, "r");
            Var x_at = k.let(wide(ic) * wide(p.x_channel) + wide(r) * wide(p.dilation), "x_at");
            k.for_(c0, c1, [&](Expr q) {
                body(q, r, x_at);
                Var wrap = k.let(r + 1 == p.kernel, "wrap");
                x_at = x_at + select(wrap, channel_step.expr(), wide(p.dilation));
                r = select(wrap, Expr(0), r + 1);
            });
            acc.close_chunk();
        },
        kChunkTerms);
}

// The spread form: the thread's tm channels and tn positions (bn/tn apart) take the terms in
// order in one loop every thread shares (flat_taps). With stride 1, positions read x at
// adjacent addresses, in i64 so that adjacent threads' positions are visibly adjacent:
// - a whole tile (its channels inside the group, its positions inside y, every tap of them inside
//   x) reads w and x as they are;
// - any other reads its channels clamped and adds a term only where the position is inside y and
//   its tap inside x (the others skipped). Where every address the tile would read lies in x's
//   buffer, it reads x unconditionally; elsewhere the load is under a select too (a masked load,
//   made only where the tap is inside x), which keeps GCC from holding the accumulators in
//   registers, so it is left to the few tiles at a buffer's ends.
// With another stride a tile reads its positions clamped to y and its taps clamped to x, the taps
// outside x skipped.
void spread_terms(KernelBuilder& k, const Conv1dViews& p, const Place& at, const Conv1dSchedule& s,
                  Accumulators& acc) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    const Expr span = (wide(p.kernel) - 1) * wide(p.dilation);
    const Expr first_read = wide(at.t0) - wide(p.padding);  // column 0's tap 0, in x's channel
    const Expr last_read = first_read + (s.bn - 1) + span;
    Var whole = k.let(at.oc0 + (s.bm - 1) <= at.oc_last && at.t0 + s.bn <= at.l_out &&
                          p.stride == 1 && first_read >= 0 && last_read < wide(p.length),
                      "whole");
    enum class Reads { whole, in_buffer, masked, clamped };
    auto terms = [&](Reads reads) {
        std::vector<Var> rows, starts, positions;
        for (int r = 0; r < s.tm; ++r) {
            const Expr row = at.ty * s.tm + r;
            rows.push_back(k.let(
                reads == Reads::whole ? wide(at.oc0 + row) * wide(at.terms) : wide(w_row(at, row)),
                "w_row"));
        }
        // Each position's first tap: its index in x's channel 0 (stride 1), and its position
        // (clamped to y's last with another stride).
        for (int c = 0; c < s.tn; ++c) {
            const Expr column = at.column(s, c);
            if (reads != Reads::clamped)
                starts.push_back(
                    k.let(wide(at.x_base) + wide(at.t0) + at.wide_column(s, c) - wide(p.padding),
                          "start"));
            if (reads == Reads::in_buffer || reads == Reads::masked) {
                // A position past y's end never has a tap: its output is not stored.
                positions.push_back(
                    k.let(select(at.t0 + column < at.l_out, at.t0 + column - p.padding, p.length),
                          "position"));
            } else if (reads == Reads::clamped) {
                positions.push_back(k.let(first_tap(p, at, column), "position"));
            }
        }
        flat_taps(k, p, at, acc, [&](Expr q, Expr r, Expr x_at) {
            std::vector<Expr> wv, xv, has;
            for (const Var& row : rows) wv.push_back(k.let(to_f32(p.w(row + wide(q))), "w"));
            if (reads == Reads::whole) {
                for (const Var& start : starts) xv.push_back(k.let(to_f32(p.x(start + x_at)), "x"));
                return acc.add_term(wv, xv);
            }
            Var offset = k.let(r * p.dilation, "offset");
            std::optional<Var> channel;
            if (reads == Reads::clamped)
                channel = k.let(wide(at.x_base) + x_at - wide(offset), "channel");
            for (size_t c = 0; c < positions.size(); ++c) {
                Var pos = k.let(positions[c] + offset, "pos");
                Var inside = k.let(pos >= 0 && pos < p.length, "inside");
                has.push_back(inside);
                if (reads == Reads::in_buffer) {
                    xv.push_back(k.let(to_f32(p.x(starts[c] + x_at)), "x"));
                } else if (reads == Reads::masked) {
                    xv.push_back(
                        k.let(select(inside, to_f32(p.x(starts[c] + x_at)), Expr(0.0f)), "x"));
                } else {
                    const Expr clamped = min(max(pos.expr(), Expr(0)), p.length - 1);
                    xv.push_back(k.let(to_f32(p.x(*channel + wide(clamped))), "x"));
                }
            }
            acc.add_term_where(wv, xv, has);
        });
    };
    // Whether every address a stride-1 edge tile would read (its channels' first to last tap)
    // lies in x's buffer. Where x is read through a prologue there is no buffer to bound: such a
    // tile's loads stay under selects.
    auto other_unit_stride = [&] {
        if (!p.x.buffer) return terms(Reads::masked);
        const Expr lowest = wide(at.x_base) + first_read;
        const Expr highest = wide(at.x_base) + (wide(at.cg) - 1) * wide(p.x_channel) + last_read;
        k.if_(
            lowest >= 0 && highest < wide(p.x.buffer->len()), [&] { terms(Reads::in_buffer); },
            [&] { terms(Reads::masked); });
    };
    k.if_(
        whole, [&] { terms(Reads::whole); },
        [&] { k.if_(p.stride == 1, other_unit_stride, [&] { terms(Reads::clamped); }); });
}

// The staged form: the terms q = ic*kernel + r in steps of bk; each step's w (bm x bk, stored
// term-major: w_tile[q*w_ld + row]) and taps of x (bk x bn: x_tile[q*x_ld + column], the tap r
// of channel ic at each column's position) copied into shared tiles as f32, then every thread
// adds the step's terms in order. Taps in the padding are stored clamped; blocks with none sum
// without a test (whole steps unrolled), the others test each tap and skip those outside x.
void staged_terms(KernelBuilder& k, const Conv1dViews& p, const Place& at, const Conv1dSchedule& s,
                  Accumulators& acc) {
    const int T = s.threads(), bm = s.bm, bn = s.bn, bk = s.bk;
    const int w_ld = bm + kTilePad, x_ld = bn + kTilePad;
    auto w_tile = k.shared(DType::f32, int64_t{bk} * w_ld, "w_tile");
    auto x_tile = k.shared(DType::f32, int64_t{bk} * x_ld, "x_tile");
    // w's rows are contiguous along the terms: consecutive threads take consecutive terms.
    const std::vector<TileSlot> w_slots = tile_slots(k, bm * bk, T, [&](const Expr& e) {
        Var row = k.let(e / bk, "row");
        Var q = k.let(e % bk, "q");
        return TileSlot{k.let(q * w_ld + row, "w_tile_at"), k.let(w_row(at, row), "w_row"), q,
                        std::nullopt};
    });
    // x is contiguous along the length: consecutive threads take consecutive columns. Each slot
    // keeps its term's channel and tap, advanced by bk each step (a term past the last reads
    // the last channel: in bounds, never used).
    const std::vector<TileSlot> x_slots = tile_slots(k, bk * bn, T, [&](const Expr& e) {
        Var q = k.let(e / bn, "q");
        Var column = k.let(e % bn, "column");
        return TileSlot{k.let(q * x_ld + column, "x_tile_at"),
                        k.let(first_tap(p, at, column), "x_start"), q, std::nullopt};
    });
    std::vector<Var> slot_ic, slot_r;
    for (const TileSlot& slot : x_slots) {
        slot_ic.push_back(k.let(slot.term / p.kernel, "slot_ic"));
        slot_r.push_back(k.let(slot.term % p.kernel, "slot_r"));
    }
    Var step_ic = k.let(Expr(bk) / p.kernel, "step_ic");
    Var step_r = k.let(Expr(bk) % p.kernel, "step_r");
    // Copies the step from term p0 into the tiles (steps in order: the slots' taps advance).
    auto put = [&](const Expr& p0) {
        for (const TileSlot& slot : w_slots)
            store_slot(k, w_tile, slot, to_f32(p.w(slot.line + min(p0 + slot.term, at.terms - 1))));
        for (size_t i = 0; i < x_slots.size(); ++i) {
            Expr pos = min(max(x_slots[i].line + slot_r[i] * p.dilation, 0), p.length - 1);
            Expr channel = min(slot_ic[i].expr(), at.cg - 1);
            store_slot(k, x_tile, x_slots[i], to_f32(p.x(at.x_base + channel * p.x_channel + pos)));
            slot_r[i] = slot_r[i] + step_r;
            Var wrap = k.let(slot_r[i] >= p.kernel, "wrap");
            slot_r[i] = select(wrap, slot_r[i] - p.kernel, slot_r[i]);
            slot_ic[i] = slot_ic[i] + step_ic + select(wrap, Expr(1), Expr(0));
        }
        k.barrier();
    };
    Var w_at = k.let(at.ty * s.tm, "w_at");
    Var x_at = k.let(at.tx * s.tn, "x_at");
    auto runs = [&](const Expr& q) {
        return std::pair{read_run(k, w_tile, q * w_ld + w_at, s.tm, "w"),
                         read_run(k, x_tile, q * x_ld + x_at, s.tn, "x")};
    };
    auto term = [&](const Expr& q) {
        const auto [wv, xv] = runs(q);
        acc.add_term(wv, xv);
    };
    // The thread's columns' first taps, for the blocks that test them.
    std::vector<Var> starts;
    for (int c = 0; c < s.tn; ++c)
        starts.push_back(k.let(first_tap(p, at, at.tx * s.tn + c), "start"));
    // Whether every tap of the block's columns lies inside x (the same in every thread): its
    // first column's first tap and its last column's last tap (columns past l_out take y's last
    // position).
    Var first = k.let(at.t0 * p.stride - p.padding, "first");
    Var last =
        k.let((min(at.t0 + bn, at.l_out) - 1) * p.stride - p.padding + (p.kernel - 1) * p.dilation,
              "last");
    Var inside = k.let(first >= 0 && last < p.length, "inside");
    // Terms p0 .. p0 + count - 1, each tap tested: column c's term exists where its position
    // start_c + r*dilation lies in [0, length).
    auto tested_terms = [&](const Expr& p0, const Expr& count) {
        Var r = k.let(p0 % p.kernel, "r");
        k.for_(0, count, [&](Expr q) {
            Var offset = k.let(r * p.dilation, "offset");
            std::vector<Expr> has;
            for (const Var& start : starts) {
                Var pos = k.let(start + offset, "pos");
                has.push_back(pos >= 0 && pos < p.length);
            }
            const auto [wv, xv] = runs(q);
            acc.add_term_where(wv, xv, has);
            r = r + 1;
            r = select(r == p.kernel, Expr(0), r.expr());
        });
    };
    Var whole = k.let(at.terms / bk * bk, "whole");  // terms in whole steps
    k.for_(
        0, whole,
        [&](Expr p0) {
            put(p0);
            k.if_(
                inside,
                [&] {
                    for (int q = 0; q < bk; ++q) term(Expr(q));
                },
                [&] { tested_terms(p0, bk); });
            close_after_step(k, acc, p0, bk, at.terms);
            k.barrier();  // the step's tiles are read before the next step writes them
        },
        bk);
    k.if_(whole < at.terms, [&] {
        put(whole);
        Var count = k.let(at.terms - whole, "count");
        k.if_(
            inside, [&] { k.for_(0, count, [&](Expr q) { term(q); }); },
            [&] { tested_terms(whole, count); });
    });
    acc.close_chunk();
}

// The memo key of a kernel: every comptime value it is built from.
std::string kernel_key(const Conv1dTypes& t, const Conv1dSchedule& s) {
    return fmt::format("conv1d/{}/{}/{}/m{}n{}k{}t{}x{}s{}c{}w{}x{}o{}b{}", name(t.input),
                       name(t.output), s.name, s.bm, s.bn, s.bk, s.tm, s.tn, s.staged, s.spread,
                       s.wm, s.wn, s.totals_in_memory, s.min_blocks);
}

std::function<ir::Kernel()> builder(const Conv1dTypes& t, const Conv1dSchedule& s) {
    return [t, s] { return conv1d_kernel(t, s); };
}

// channel_stride 0 resolved to the dense value.
int64_t channel_stride(const Conv1dView& v, int64_t length) {
    return v.channel_stride != 0 ? v.channel_stride : length;
}

Conv1dView dense_output(const Conv1dShape& s) {
    const int64_t l_out = s.out_length();
    return {0, s.out_channels * l_out, l_out};
}

std::string shape_text(const Conv1dShape& s) {
    return fmt::format(
        "batch={} in_channels={} length={} out_channels={} kernel={} stride={} padding={} "
        "dilation={} groups={}",
        s.batch, s.in_channels, s.length, s.out_channels, s.kernel, s.params.stride,
        s.params.padding, s.params.dilation, s.params.groups);
}

}  // namespace

void conv1d_check_shape(const Conv1dShape& s) {
    const Conv1dParams& p = s.params;
    if (s.batch < 1 || s.in_channels < 1 || s.length < 1 || s.out_channels < 1 || s.kernel < 1)
        fail("conv1d: shape {}; expected batch, in_channels, length, out_channels and kernel >= 1",
             shape_text(s));
    if (p.stride < 1) fail("conv1d: stride {}; expected >= 1", p.stride);
    if (p.dilation < 1) fail("conv1d: dilation {}; expected >= 1", p.dilation);
    if (p.padding < 0) fail("conv1d: padding {}; expected >= 0", p.padding);
    if (p.groups < 1) fail("conv1d: groups {}; expected >= 1", p.groups);
    for (int64_t v : {s.batch, s.in_channels, s.length, s.out_channels, s.kernel, p.stride,
                      p.padding, p.dilation, p.groups})
        if (v > kMaxIndex)
            fail("conv1d: shape {}; expected every size and parameter at most {}", shape_text(s),
                 kMaxIndex);
    if (s.in_channels % p.groups != 0 || s.out_channels % p.groups != 0)
        fail(
            "conv1d: in_channels {} and out_channels {} in groups of {}; expected groups to "
            "divide both",
            s.in_channels, s.out_channels, p.groups);
    const int64_t padded = s.length + 2 * p.padding;
    if (padded > kMaxIndex)
        fail("conv1d: length {} + 2*padding {} = {}; expected at most {} (32-bit indices)",
             s.length, p.padding, padded, kMaxIndex);
    const int64_t span = p.dilation * (s.kernel - 1) + 1;
    if (span > padded)
        fail(
            "conv1d: kernel {} with dilation {} spans {} positions but the padded input has {} "
            "(length {} + 2*padding {}); expected a kernel that fits the padded input",
            s.kernel, p.dilation, span, padded, s.length, p.padding);
    const int64_t l_out = s.out_length();
    const int64_t cg = s.in_channels / p.groups;
    if (l_out > kMaxExtent || s.out_channels > kMaxExtent ||
        !fits_index(s.batch, s.out_channels, l_out) || !fits_index(s.out_channels, cg, s.kernel))
        fail(
            "conv1d: shape {}; expected batch x out_channels x l_out ({} x {} x {}) and "
            "out_channels x in_channels/groups x kernel at most {} (32-bit indices)",
            shape_text(s), s.batch, s.out_channels, l_out, kMaxIndex);
}

namespace {

// A check that x's view lies in its buffer's `count` elements, with 32-bit indices.
void check_view(const Conv1dView& v, const Conv1dShape& s, size_t count) {
    if (v.offset < 0 || v.batch_stride < 0 || v.channel_stride < 0)
        fail(
            "conv1d: x view has offset {}, batch stride {}, channel stride {}; expected values "
            ">= 0",
            v.offset, v.batch_stride, v.channel_stride);
    const int64_t cs = channel_stride(v, s.length);
    if (v.offset > kMaxIndex || v.batch_stride > kMaxIndex || cs > kMaxIndex)
        fail(
            "conv1d: x view has offset {}, batch stride {}, channel stride {}; expected each at "
            "most {}",
            v.offset, v.batch_stride, cs, kMaxIndex);
    const int64_t last =
        v.offset + (s.batch - 1) * v.batch_stride + (s.in_channels - 1) * cs + s.length - 1;
    if (last >= static_cast<int64_t>(count))
        fail(
            "conv1d: x view of {} x {} x {} (offset {}, batch stride {}, channel stride {}) "
            "reaches element {}; expected it inside the buffer's {} elements",
            s.batch, s.in_channels, s.length, v.offset, v.batch_stride, cs, last, count);
    if (last > kMaxIndex)
        fail("conv1d: x view reaches element {}; expected at most {} (32-bit indices)", last,
             kMaxIndex);
}

Tuned<Buffer> make_tuned(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
                         const Conv1dShape& shape, DType out, MatmulClass cls) {
    const Conv1dTypes t{x.dtype(), out};
    const Conv1dParams& p = shape.params;
    const std::span<const Conv1dSchedule> points = conv1d_domain(device, cls);
    const bool on_tensor_cores = points.front().tensor_core();
    Tuned<Buffer> tuned(
        "conv1d",
        fmt::format("batch={},c_in={},length={},c_out={},kernel={},stride={},padding={},"
                    "dilation={},groups={},in={},out={}{}",
                    shape.batch, shape.in_channels, shape.length, shape.out_channels, shape.kernel,
                    p.stride, p.padding, p.dilation, p.groups, name(t.input), name(t.output),
                    on_tensor_cores ? ",class=tensor_core" : ""),
        device);
    const VariantTable& table =
        memo_variant_table(fmt::format("conv1d/{}/{}{}", name(t.input), name(t.output),
                                       on_tensor_cores ? "/tensor_core" : ""),
                           device.info().backend, "conv1d", [&] {
                               std::vector<NamedKernel> kernels;
                               for (const auto& s : points)
                                   kernels.push_back({s.name, kernel_key(t, s), builder(t, s)});
                               return kernels;
                           });
    tuned.variants(table,
                   [&device, &x, xv, &w, shape, out, points](size_t i) -> Tuned<Buffer>::Closure {
                       return [&device, &x, xv, &w, shape, out, s = &points[i]](int iters) {
                           return conv1d_bench(device, x, xv, w, shape, out, *s, iters);
                       };
                   });
    return tuned;
}

// The implicit GEMM in matmul's tensor-core kernel: batch n*groups + g; A is group g's rows of w
// (og x k, contiguous along q); B(q, t) = x[n, g*cg + q / kernel, t*stride - padding +
// (q % kernel)*dilation], zero in the padding.
void tensor_core_terms(KernelBuilder& k, const Conv1dViews& p, const Conv1dTypes& t,
                       const Conv1dSchedule& s, const Conv1dStore& store) {
    Var cg = k.let(p.c_in / p.groups, "cg");
    Var og = k.let(p.c_out / p.groups, "og");
    Var l_out = k.let(out_length(p), "l_out");
    Var terms = k.let(cg * p.kernel, "terms");
    auto position = [=](const Expr& col, const Expr& q) {
        return col * p.stride - p.padding + q % p.kernel * p.dilation;
    };
    const TensorCoreOperand w{
        p.w, true, [=](const Expr& batch) { return batch % p.groups * og * terms; },
        [=](const Expr& base, const Expr& row, const Expr& q) { return base + row * terms + q; }};
    const TensorCoreOperand x{
        p.x, false,
        [=](const Expr& batch) {
            return p.x_offset + batch / p.groups * p.x_batch + batch % p.groups * cg * p.x_channel;
        },
        [=](const Expr& base, const Expr& col, const Expr& q) {
            return base + q / p.kernel * p.x_channel + min(max(position(col, q), 0), p.length - 1);
        },
        [=](const Expr& col, const Expr& q) {
            const Expr at = position(col, q);
            return at >= 0 && at < p.length;
        }};
    tensor_core_product(k, {w, x, og, l_out, terms}, t.input, as_matmul(s),
                        [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& v) {
                            store(batch / p.groups, batch % p.groups * og + row, col, v);
                        });
}

}  // namespace

int64_t Conv1dShape::out_length() const {
    const int64_t room = length + 2 * params.padding - params.dilation * (kernel - 1) - 1;
    // Floor division (room may be negative: the kernel longer than the padded input).
    const int64_t q = room / params.stride;
    return (room % params.stride != 0 && room < 0 ? q - 1 : q) + 1;
}

const std::vector<Conv1dSchedule>& conv1d_variants() {
    // Each point's name spells its knobs, so the two cannot drift apart.
    auto direct = [](int bm, int bn) {
        return Conv1dSchedule{fmt::format("d{}x{}", bm, bn), bm, bn, 1, bm, 1, false};
    };
    auto staged = [](int bm, int bn, int bk, int tm, int tn) {
        return Conv1dSchedule{
            fmt::format("s{}x{}_k{}_t{}x{}", bm, bn, bk, tm, tn), bm, bn, bk, tm, tn, true};
    };
    auto spread = [](int bm, int bn, int tm, int tn) {
        return Conv1dSchedule{
            fmt::format("d{}x{}_t{}x{}_s", bm, bn, tm, tn), bm, bn, 1, tm, tn, false, true};
    };
    // Totals in memory and two blocks an SM (a thread of 8 x 8 outputs).
    auto in_memory = [](Conv1dSchedule s) {
        s.totals_in_memory = true;
        s.min_blocks = 2;
        s.name += "_m_b2";
        return s;
    };
    static const std::vector<Conv1dSchedule> variants = {
        direct(1, 128),           direct(8, 64),
        staged(32, 32, 16, 2, 2), staged(64, 64, 8, 4, 4),
        staged(64, 128, 8, 4, 8), in_memory(staged(128, 128, 8, 8, 8)),
        spread(8, 128, 8, 4),     spread(4, 128, 4, 4),
    };
    return variants;
}

const std::vector<Conv1dSchedule>& conv1d_tensor_core_variants() {
    auto point = [](int bm, int bn, int wm, int wn) {
        Conv1dSchedule s{fmt::format("tc{}x{}_k32_w{}x{}", bm, bn, wm, wn), bm, bn, 32, 1, 1, true};
        s.wm = wm;
        s.wn = wn;
        return s;
    };
    static const std::vector<Conv1dSchedule> variants = {
        point(128, 128, 64, 32), point(64, 128, 32, 64), point(64, 64, 32, 32),
        point(32, 32, 16, 16)};
    return variants;
}

const std::vector<Conv1dSchedule>& conv1d_all_variants() {
    static const std::vector<Conv1dSchedule> all =
        both_classes(conv1d_variants(), conv1d_tensor_core_variants());
    return all;
}

std::span<const Conv1dSchedule> conv1d_domain(const Device& device, MatmulClass cls) {
    return class_points(conv1d_all_variants(), conv1d_variants().size(),
                        cls == MatmulClass::tensor_core && device.info().tensor_cores);
}

const Conv1dSchedule& conv1d_variant(const std::string& n) {
    for (const auto& s : conv1d_all_variants())
        if (s.name == n) return s;
    fail("conv1d: no schedule named '{}'", n);
}

ir::Kernel conv1d_kernel(const Conv1dTypes& t, const Conv1dSchedule& s) {
    check_types(t);
    check_schedule(s);
    KernelBuilder k(fmt::format("conv1d_{}_{}_{}", name(t.input), name(t.output), s.name),
                    s.threads());
    const Params p = declare_params(k, t);
    require_contract(k, p);
    conv1d_body(k, p, t, s, [&](const Expr& n, const Expr& oc, const Expr& pos, const Expr& v) {
        auto wide = [](const Expr& e) { return cast(DType::i64, e); };
        p.y[wide(p.y_offset) + wide(n) * wide(p.y_batch) + wide(oc) * wide(p.y_channel) +
            wide(pos)] = t.output == DType::f32 ? v : cast(t.output, v);
    });
    return k.finish();
}

void conv1d_body(KernelBuilder& k, const Conv1dViews& p, const Conv1dTypes& t,
                 const Conv1dSchedule& s, const Conv1dStore& store) {
    check_types(t);
    check_schedule(s);
    if (s.tensor_core()) return tensor_core_terms(k, p, t, s, store);
    const Place at = place(k, p, s);
    ask_min_blocks(k, s.min_blocks);
    Accumulators acc(k, s.tm, s.tn, s.totals_in_memory ? Totals::memory : Totals::registers);
    if (s.staged)
        staged_terms(k, p, at, s, acc);
    else if (s.spread)
        spread_terms(k, p, at, s, acc);
    else
        direct_terms(k, p, at, s, acc);
    for (int r = 0; r < s.tm; ++r)
        for (int c = 0; c < s.tn; ++c) {
            Var oc = k.let(at.oc0 + at.ty * s.tm + r, "oc");
            const Expr v = acc.value(r, c);
            // The position in i64, tested there too: adjacent threads' outputs visibly adjacent.
            Var pos = k.let(cast(DType::i64, at.t0) + at.wide_column(s, c), "pos");
            k.if_(oc <= at.oc_last && pos < cast(DType::i64, at.l_out),
                  [&] { store(at.n, oc, pos, v); });
        }
}

int64_t conv1d_grid(const Conv1dShape& shape, const Conv1dSchedule& s) {
    const int64_t og = shape.out_channels / shape.params.groups;
    return shape.batch * shape.params.groups * ceil_div(og, s.bm) *
           ceil_div(shape.out_length(), s.bn);
}

std::vector<Arg> conv1d_scalars(const Conv1dShape& sh, const Conv1dView& x, const Conv1dView& y) {
    auto i32 = [](int64_t v) { return Arg(static_cast<int32_t>(v)); };
    const Conv1dParams& p = sh.params;
    return {i32(sh.batch),        i32(sh.in_channels), i32(sh.length),
            i32(sh.out_channels), i32(sh.kernel),      i32(p.stride),
            i32(p.padding),       i32(p.dilation),     i32(p.groups),
            i32(x.offset),        i32(x.batch_stride), i32(channel_stride(x, sh.length)),
            i32(y.offset),        i32(y.batch_stride), i32(channel_stride(y, sh.out_length()))};
}

void conv1d_check(const Buffer& x, const Conv1dView& xv, const Buffer& w, const Conv1dShape& s,
                  DType out) {
    conv1d_check_shape(s);
    if (!is_input_float(x.dtype()))
        fail("conv1d: x is {}; expected f32, f16 or bf16", name(x.dtype()));
    if (w.dtype() != x.dtype())
        fail("conv1d: w is {} but x is {}; expected the same dtype", name(w.dtype()),
             name(x.dtype()));
    check_types({x.dtype(), out});
    if (&x.device() != &w.device())
        fail("conv1d: x lives on {} but w on {}; expected one device", x.device().info().id,
             w.device().info().id);
    check_view(xv, s, x.count());
    const int64_t cg = s.in_channels / s.params.groups;
    const int64_t need = s.out_channels * cg * s.kernel;
    if (static_cast<int64_t>(w.count()) < need)
        fail(
            "conv1d: w has {} elements; expected out_channels x in_channels/groups x kernel = "
            "{} x {} x {} = {}",
            w.count(), s.out_channels, cg, s.kernel, need);
}

Timed<Buffer> conv1d_bench(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
                           const Conv1dShape& shape, DType out, const Conv1dSchedule& schedule,
                           int iters) {
    conv1d_check(x, xv, w, shape, out);
    check_schedule(schedule);
    if (schedule.tensor_core()) check_class(MatmulClass::tensor_core, x.dtype(), "conv1d");
    if (&x.device() != &device)
        fail("conv1d: x lives on {}; expected {}", x.device().info().id, device.info().id);
    const Conv1dTypes t{x.dtype(), out};
    auto compiled = memo_compiled(device, kernel_key(t, schedule), builder(t, schedule));
    Buffer y(device, out,
             static_cast<size_t>(shape.batch * shape.out_channels * shape.out_length()));
    std::vector<Arg> args{x, w, y};
    for (const Arg& a : conv1d_scalars(shape, xv, dense_output(shape))) args.push_back(a);
    const int64_t grid = conv1d_grid(shape, schedule);
    const double ms = time_dispatches(device, iters, [&] { compiled->launch(grid, args); });
    return {std::move(y), ms};
}

Tuned<Buffer> conv1d_tuned(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
                           const Conv1dShape& shape, DType out, MatmulClass cls) {
    conv1d_check(x, xv, w, shape, out);
    check_class(cls, x.dtype(), "conv1d");
    return make_tuned(device, x, xv, w, shape, out, cls);
}

Buffer conv1d(Device& device, const Buffer& x, const Conv1dView& xv, const Buffer& w,
              const Conv1dShape& shape, DType out, MatmulClass cls, Tuner& tuner) {
    conv1d_check(x, xv, w, shape, out);
    check_class(cls, x.dtype(), "conv1d");
    if (&x.device() != &device)
        fail("conv1d: x lives on {}; expected {}", x.device().info().id, device.info().id);
    return make_tuned(device, x, xv, w, shape, out, cls).run(tuner);
}

Buffer conv1d(Device& device, const Conv1dInput& x, const Conv1dWeight& w,
              const Conv1dParams& params, DType out, MatmulClass cls, Tuner& tuner) {
    if (x.batch < 1 || x.channels < 1 || x.length < 1)
        fail("conv1d: x is {} x {} x {}; expected every size >= 1", x.batch, x.channels, x.length);
    if (w.out_channels < 1 || w.in_channels < 1 || w.kernel < 1)
        fail("conv1d: w is {} x {} x {}; expected every size >= 1", w.out_channels, w.in_channels,
             w.kernel);
    if (!fits_index(x.batch, x.channels, x.length) ||
        static_cast<int64_t>(x.buffer.count()) != x.batch * x.channels * x.length)
        fail("conv1d: x has {} elements; expected batch x channels x length = {} x {} x {}",
             x.buffer.count(), x.batch, x.channels, x.length);
    if (!fits_index(w.out_channels, w.in_channels, w.kernel) ||
        static_cast<int64_t>(w.buffer.count()) != w.out_channels * w.in_channels * w.kernel)
        fail(
            "conv1d: w has {} elements; expected out_channels x in_channels x kernel = {} x {} x "
            "{}",
            w.buffer.count(), w.out_channels, w.in_channels, w.kernel);
    const Conv1dShape shape{x.batch, x.channels, x.length, w.out_channels, w.kernel, params};
    conv1d_check_shape(shape);
    if (w.in_channels != x.channels / params.groups)
        fail(
            "conv1d: w has {} input channels per group but x has {} channels in {} groups; "
            "expected w's in_channels = {}",
            w.in_channels, x.channels, params.groups, x.channels / params.groups);
    return conv1d(device, x.buffer, {0, x.channels * x.length, x.length}, w.buffer, shape, out, cls,
                  tuner);
}

}  // namespace kiln::ops
