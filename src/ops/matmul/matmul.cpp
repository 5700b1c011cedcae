// matmul in the DSL: one kernel source, monomorphized per dtypes, operand layouts and schedule.
#include "ops/matmul/matmul.hpp"
#include "ops/class_domain.hpp"

#include "base/break_switch.hpp"

#include "base/ceil_div.hpp"
#include "ops/contraction.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/kernel_parts.hpp"
#include "ops/matmul/matmul_tensor_core.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/compile.hpp"

namespace kiln::ops {
namespace {

using namespace contraction;

void check_types(const MatmulTypes& t) {
    contraction::check_types("matmul", t.input, t.output);
}

void check_schedule(const MatmulSchedule& s) {
    if (s.split_k && s.tensor_core())
        fail("matmul schedule {}: split-k on tensor cores; expected an exact point", s.name);
    check_exact_knobs("matmul", s.name, s.tensor_core(), s.totals_in_memory, s.min_blocks);
    if (s.tensor_core()) return check_tensor_core_schedule(s);
    check_min_blocks("matmul", s.name, s.min_blocks, s.threads());
    if (s.column_tiles != 1 &&
        (!s.chunk_major || s.column_tiles < 1 || s.bn % (s.column_tiles * s.tn) != 0))
        fail(
            "matmul schedule {}: {} column tiles of {} columns; expected a chunk-major point "
            "whose bn is a multiple of the tiles times tn",
            s.name, s.column_tiles, s.bn);
    if (s.chunk_major) {
        if (s.staged || !s.spread)
            fail(
                "matmul schedule {}: chunk-major row tiles; expected a direct point with spread "
                "columns",
                s.name);
        if (s.bm % s.tm != 0 || s.bm / s.tm < 2)
            fail(
                "matmul schedule {}: {} rows of chunk-major tiles of {}; expected a multiple of "
                "the tile's rows, 2 tiles or more",
                s.name, s.bm, s.tm);
        // The totals are a block tile of bm x bn f32 in shared memory, beside a column tile's
        // chunk of B where there are column tiles.
        const bool copies_b = s.column_tiles > 1;
        const int64_t bytes =
            (int64_t{s.bm} * s.bn + (copies_b ? int64_t{kChunkTerms} * s.row_columns() : 0)) * 4;
        if (bytes > kMaxSharedBytes)
            fail(
                "matmul schedule {}: chunk-major totals of {} x {} f32{} ({} bytes); expected at "
                "most {}",
                s.name, s.bm, s.bn,
                copies_b ? fmt::format(" and B's tile of {} x {}", kChunkTerms, s.row_columns())
                         : "",
                bytes, kMaxSharedBytes);
    }
    // A chunk-major block is one row of threads, each walking its row tiles.
    check_tiles("matmul", s.name, s.chunk_major ? s.tm : s.bm, s.row_columns(), s.tm, s.tn);
    if (s.prefetch && !s.staged)
        fail("matmul schedule {}: prefetch without shared tiles; expected a staged point", s.name);
    if (s.spread && s.staged)
        fail("matmul schedule {}: spread columns with shared tiles; expected a direct point",
             s.name);
    if (s.staged) check_step("matmul", s.name, s.bk);
}

const char* layout_name(const MatmulTypes& t) {
    static const char* const names[] = {"nn", "nt", "tn", "tt"};
    return names[(t.a_transposed ? 2 : 0) + (t.b_transposed ? 1 : 0)];
}

// The kernel's parameters, in launch order: the operands' views, then C's.
struct Params : MatmulViews {
    Memory a_buffer, b_buffer, c;
    Expr c_offset, c_batch, ldc;
};

// c in `c_type`: C's dtype, or f32 for a split point's scratch of chunk sums.
Params declare_params(KernelBuilder& k, const MatmulTypes& t, DType c_type) {
    Memory a = k.input("a", t.input);
    Memory b = k.input("b", t.input);
    Memory c = k.output("c", c_type);
    auto i32 = [&](const char* n) { return k.scalar(n, DType::i32); };
    Expr batch = i32("batch"), m = i32("m"), n = i32("n"), kk = i32("k");
    Expr a_offset = i32("a_offset"), a_batch = i32("a_batch"), lda = i32("lda");
    Expr b_offset = i32("b_offset"), b_batch = i32("b_batch"), ldb = i32("ldb");
    Expr c_offset = i32("c_offset"), c_batch = i32("c_batch"), ldc = i32("ldc");
    return {{buffer_elements(a), buffer_elements(b), batch, m, n, kk, a_offset, a_batch, lda,
             b_offset, b_batch, ldb},
            a,
            b,
            c,
            c_offset,
            c_batch,
            ldc};
}

// The launch contract: sizes >= 1, no negative offset or stride, every view's last element
// inside its buffer (in i64), C's rows and batches apart so no two outputs share an element.
void require_contract(KernelBuilder& k, const Params& p, const MatmulTypes& t) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    k.require(p.batch >= 1 && p.m >= 1 && p.n >= 1 && p.k >= 1, "batch, m, n and k are >= 1");
    k.require(p.m <= static_cast<int32_t>(kMaxExtent) && p.n <= static_cast<int32_t>(kMaxExtent),
              fmt::format("m and n are at most {}", kMaxExtent));
    k.require(p.a_offset >= 0 && p.a_batch >= 0 && p.lda >= 0 && p.b_offset >= 0 &&
                  p.b_batch >= 0 && p.ldb >= 0 && p.c_offset >= 0 && p.c_batch >= 0 && p.ldc >= 0,
              "offsets and strides are >= 0");
    auto last = [&](const Expr& off, const Expr& bs, const Expr& ld, const Expr& rows,
                    const Expr& cols, bool transposed) {
        Expr r = wide(rows) - 1, c = wide(cols) - 1;
        return wide(off) + (wide(p.batch) - 1) * wide(bs) +
               (transposed ? c * wide(ld) + r : r * wide(ld) + c);
    };
    k.require(last(p.a_offset, p.a_batch, p.lda, p.m, p.k, t.a_transposed) < wide(p.a_buffer.len()),
              "a's view (m x k per batch) lies inside a");
    k.require(last(p.b_offset, p.b_batch, p.ldb, p.k, p.n, t.b_transposed) < wide(p.b_buffer.len()),
              "b's view (k x n per batch) lies inside b");
    k.require(last(p.c_offset, p.c_batch, p.ldc, p.m, p.n, false) < wide(p.c.len()),
              "c's view (m x n per batch) lies inside c");
    k.require(p.ldc >= p.n &&
                  (p.batch == 1 || wide(p.c_batch) >= wide(p.m - 1) * wide(p.ldc) + wide(p.n)),
              "c's rows and batches do not overlap (ldc >= n, c_batch >= (m-1)*ldc + n)");
}

// Where a thread works: its batch, the operands' bases, the block tile's corner and its own
// tile's corner.
struct Place {
    Expr batch, a_base, b_base, i0, j0, ty, tx;
    // The thread's c-th column of C (before clamping), relative to the tile's: side by side;
    // bn/tn apart if spread; in quads (staged, tn a multiple of 4 above 4) 4 side by side, the
    // quads 4*bn/tn apart, so 8 adjacent threads read a row of the shared B tile as 128
    // contiguous bytes (no bank conflicts for 16-byte reads).
    Expr column_in_tile(const MatmulSchedule& s, int c) const {
        const int across = s.row_columns() / s.tn;
        if (s.spread) return tx + c * across;
        if (quads(s)) return tx * 4 + (c / 4) * (across * 4) + c % 4;
        return tx * s.tn + c;
    }
    Expr column(const MatmulSchedule& s, int c) const { return j0 + column_in_tile(s, c); }
    static bool quads(const MatmulSchedule& s) { return s.staged && s.tn > 4 && s.tn % 4 == 0; }
};

Place place(KernelBuilder& k, const MatmulViews& p, const MatmulSchedule& s) {
    const BlockIndex block = block_index(k, p.batch, p.m, p.n, s, p.block);
    const int across = s.row_columns() / s.tn;  // threads along a row of the block tile
    Var t = k.let(k.thread_index(), "t");
    const bool one_row = s.threads() <= across;  // then ty is 0 and tx is t, known as such
    return {block.batch,
            k.let(p.a_offset + block.batch * p.a_batch, "a_base"),
            k.let(p.b_offset + block.batch * p.b_batch, "b_base"),
            k.let(block.tile_m * s.bm, "i0"),
            k.let(block.tile_n * s.bn, "j0"),
            one_row ? Expr(0) : Expr(k.let(t / across, "ty")),
            one_row ? Expr(t) : Expr(k.let(t % across, "tx"))};
}

// A thread's reads in the direct forms: element (row, q) of A is a_row[r] + q*a_step, element
// (q, col) of B is b_col[c] + q*b_step, in i64 (products of two i32 values and their sums never
// wrap there, so a CPU's compiler sees adjacent threads' columns as adjacent addresses). Rows and
// columns past m and n read clamped where `clamp` (their outputs are not stored).
struct DirectReads {
    std::vector<Var> a_row, b_col;
    Expr a_step, b_step;
    // Term q's tm values of A and tn values of B, as f32.
    std::vector<Expr> a_values(KernelBuilder& k, const MatmulViews& p, const Expr& q) const {
        std::vector<Expr> v;
        for (const Var& base : a_row)
            v.push_back(k.let(to_f32(p.a(base + cast(DType::i64, q) * a_step)), "a"));
        return v;
    }
    // `shift` (i64, uniform) is added to every column's element: it joins the term's offset, so
    // each lane's address stays its column's plus one offset (adjacent lanes' adjacent to a
    // CPU's compiler).
    std::vector<Expr> b_values(KernelBuilder& k, const MatmulViews& p, const Expr& q,
                               const std::optional<Expr>& shift = std::nullopt) const {
        std::vector<Expr> v;
        const Expr offset = cast(DType::i64, q) * b_step;
        for (const Var& base : b_col)
            v.push_back(k.let(to_f32(p.b(base + (shift ? offset + *shift : offset))), "b"));
        return v;
    }
    // Term q's values, added to acc.
    void add_term(KernelBuilder& k, const MatmulViews& p, Accumulators& acc, const Expr& q) const {
        const std::vector<Expr> av = a_values(k, p, q);
        acc.add_term(av, b_values(k, p, q));
    }
};

// The rows of A a thread reads from at.i0 + at.ty * tm (clamped to m where `clamp`).
std::vector<Var> a_rows(KernelBuilder& k, const MatmulViews& p, const Place& at,
                        const MatmulTypes& t, const MatmulSchedule& s, bool clamp) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    std::vector<Var> rows;
    for (int r = 0; r < s.tm; ++r) {
        Expr row = at.i0 + at.ty * s.tm + r;
        if (clamp) row = min(row, p.m - 1);
        rows.push_back(
            k.let(element_at(wide(at.a_base), wide(row), 0, wide(p.lda), t.a_transposed), "a_row"));
    }
    return rows;
}

// The columns of B a thread reads (clamped to n where `clamp`).
std::vector<Var> b_columns(KernelBuilder& k, const MatmulViews& p, const Place& at,
                           const MatmulTypes& t, const MatmulSchedule& s, bool clamp) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    std::vector<Var> cols;
    for (int c = 0; c < s.tn; ++c) {
        Expr col = at.column(s, c);
        if (clamp) col = min(col, p.n - 1);
        cols.push_back(
            k.let(element_at(wide(at.b_base), 0, wide(col), wide(p.ldb), t.b_transposed), "b_col"));
    }
    return cols;
}

// Reads from those rows of A and columns of B, one term at a time.
DirectReads reads_of(const MatmulViews& p, const MatmulTypes& t, std::vector<Var> rows,
                     std::vector<Var> cols) {
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    return {std::move(rows), std::move(cols), wide(t.a_transposed ? p.lda : Expr(1)),
            wide(t.b_transposed ? Expr(1) : p.ldb)};
}

DirectReads direct_reads(KernelBuilder& k, const MatmulViews& p, const Place& at,
                         const MatmulTypes& t, const MatmulSchedule& s, bool clamp) {
    std::vector<Var> rows = a_rows(k, p, at, t, s, clamp);  // A's lets first, then B's
    return reads_of(p, t, std::move(rows), b_columns(k, p, at, t, s, clamp));
}

// The direct form: each term's tm values of A and tn values of B read from memory. In a block
// whose tile lies inside C, rows and columns are read as they are (adjacent threads' columns
// then visibly adjacent); in a block at C's edge they are read clamped.
void direct_terms(KernelBuilder& k, const MatmulViews& p, const Place& at, const MatmulTypes& t,
                  const MatmulSchedule& s, Accumulators& acc) {
    auto terms = [&](bool clamp) {
        const DirectReads reads = direct_reads(k, p, at, t, s, clamp);
        chunked_terms(k, acc, p.k, [&](Expr q) { reads.add_term(k, p, acc, q); });
    };
    k.if_((at.i0 + s.bm <= p.m) && (at.j0 + s.bn <= p.n), [&] { terms(false); },
          [&] { terms(true); });
}

// The staged form: k in steps of bk; each step's A (bm x bk, stored k-major: a_tile[q*a_ld + r])
// and B (bk x bn: b_tile[q*b_ld + c]) copied into shared tiles as f32 by consecutive threads along
// each operand's contiguous dimension, then every thread adds the step's terms in order. Whole
// steps unroll their bk terms; a short last step runs a loop over the terms that exist. With
// prefetch, a step's values are loaded into registers while the previous step is summed.
void staged_terms(KernelBuilder& k, const MatmulViews& p, const Place& at, const MatmulTypes& t,
                  const MatmulSchedule& s, Accumulators& acc) {
    const int T = s.threads(), bm = s.bm, bn = s.bn, bk = s.bk;
    // Rows of the tiles kTilePad elements longer than the block tile: consecutive threads storing
    // an operand read along k (A, or B transposed) write one column, kTilePad banks apart.
    const int a_ld = bm + kTilePad, b_ld = bn + kTilePad;
    auto a_tile = k.shared(DType::f32, int64_t{bk} * a_ld, "a_tile");
    auto b_tile = k.shared(DType::f32, int64_t{bk} * b_ld, "b_tile");
    // Transposed A is contiguous along m: consecutive threads take consecutive rows.
    const std::vector<TileSlot> a_slots = tile_slots(k, bm * bk, T, [&](const Expr& e) {
        Var r = k.let(t.a_transposed ? e % bm : e / bk, "r");
        Var q = k.let(t.a_transposed ? e / bm : e % bk, "q");
        return TileSlot{k.let(q * a_ld + r, "a_tile_at"), k.let(min(at.i0 + r, p.m - 1), "a_row"),
                        q, std::nullopt};
    });
    // Transposed B is contiguous along k.
    const std::vector<TileSlot> b_slots = tile_slots(k, bk * bn, T, [&](const Expr& e) {
        Var q = k.let(t.b_transposed ? e % bk : e / bn, "q");
        Var c = k.let(t.b_transposed ? e / bk : e % bn, "c");
        return TileSlot{k.let(q * b_ld + c, "b_tile_at"), k.let(min(at.j0 + c, p.n - 1), "b_col"),
                        q, std::nullopt};
    });
    std::vector<Var> a_vals, b_vals;
    for (size_t i = 0; i < a_slots.size(); ++i) a_vals.push_back(k.let(DType::f32, 0.0f, "a_val"));
    for (size_t i = 0; i < b_slots.size(); ++i) b_vals.push_back(k.let(DType::f32, 0.0f, "b_val"));
    auto fetch = [&](const Expr& p0) {
        for (size_t i = 0; i < a_slots.size(); ++i) {
            Expr term = min(p0 + a_slots[i].term, p.k - 1);
            a_vals[i] =
                to_f32(p.a(element_at(at.a_base, a_slots[i].line, term, p.lda, t.a_transposed)));
        }
        for (size_t i = 0; i < b_slots.size(); ++i) {
            Expr term = min(p0 + b_slots[i].term, p.k - 1);
            b_vals[i] =
                to_f32(p.b(element_at(at.b_base, term, b_slots[i].line, p.ldb, t.b_transposed)));
        }
    };
    auto put = [&] {
        for (size_t i = 0; i < a_slots.size(); ++i) store_slot(k, a_tile, a_slots[i], a_vals[i]);
        for (size_t i = 0; i < b_slots.size(); ++i) store_slot(k, b_tile, b_slots[i], b_vals[i]);
        k.barrier();
    };
    Var a_at = k.let(at.ty * s.tm, "a_at");
    // The thread's B values of a term: one run of tn, or tn/4 quads.
    const int b_run = Place::quads(s) ? 4 : s.tn;
    std::vector<Var> b_at;
    for (int c = 0; c < s.tn; c += b_run) b_at.push_back(k.let(at.column_in_tile(s, c), "b_at"));
    auto term = [&](const Expr& q) {
        const std::vector<Expr> av = read_run(k, a_tile, q * a_ld + a_at, s.tm, "a");
        std::vector<Expr> bv;
        for (const Var& b : b_at)
            for (const Expr& v : read_run(k, b_tile, q * b_ld + b, b_run, "b")) bv.push_back(v);
        acc.add_term(av, bv);
    };
    Var whole = k.let(p.k / bk * bk, "whole");  // terms in whole steps
    if (s.prefetch) fetch(0);
    k.for_(
        0, whole,
        [&](Expr p0) {
            if (!s.prefetch) fetch(p0);
            put();
            // The next step's loads (clamped: in bounds even past k) fly while this one is summed.
            if (s.prefetch) fetch(p0 + bk);
            for (int q = 0; q < bk; ++q) term(Expr(q));
            close_after_step(k, acc, p0, bk, p.k);
            k.barrier();  // the step's tiles are read before the next step writes them
        },
        bk);
    k.if_(whole < p.k, [&] {
        if (!s.prefetch) fetch(whole);
        put();
        k.for_(0, p.k - whole, [&](Expr q) { term(q); });
    });
    acc.close_chunk();
}

// Stores the thread's tile (its rows from at.i0 + at.ty * tm; value(r, c) its outputs) where it
// lies inside C. Where n is a constant multiple of bn (a graph's linear), every column is inside:
// only the row is tested, which is the same for a CPU's vector of threads, and the column and
// the value are computed under the test, next to the store (a CPU's compiler then sees one loop
// over the lanes with adjacent columns, and vectorizes the epilogue and the store instead of
// passing per-lane arrays from one loop to the next).
void store_tile(KernelBuilder& k, const MatmulViews& p, const Place& at, const MatmulSchedule& s,
                const std::function<Expr(int r, int c)>& value, const MatmulStore& store) {
    int64_t n_value = 0;
    const bool columns_inside = ir::is_const(p.n.node(), &n_value) && n_value % s.bn == 0;
    for (int r = 0; r < s.tm; ++r)
        for (int c = 0; c < s.tn; ++c) {
            Var row = k.let(at.i0 + at.ty * s.tm + r, "row");
            if (columns_inside && !break_switch("matmul_tile_edge")) {
                k.if_(row < p.m, [&] {
                    Var col = k.let(at.column(s, c), "col");
                    store(at.batch, row, col, value(r, c));
                });
                continue;
            }
            Var col = k.let(at.column(s, c), "col");
            const Expr v = value(r, c);
            Expr inside = columns_inside ? row < p.m : row < p.m && col < p.n;
            if (break_switch("matmul_tile_edge"))  // tests of the sweep only
                inside = inside && !(at.j0 + s.bn > p.n && col == p.n - 1);
            k.if_(inside, [&] { store(at.batch, row, col, v); });
        }
}

// The chunk-major form (MatmulSchedule::chunk_major): the thread's bm/tm row tiles (tm rows each,
// the block's one row of threads) in each of the block's column tiles, taken chunk by chunk of
// k: every tile's chunk c before any tile's chunk c + 1, within a chunk the column tiles in turn
// and a column tile's row tiles in turn. A chunk's sums in registers, the totals in a block tile
// where thread t's output i of row tile j in column tile u is element
// ((u*tiles + j)*tm*tn + i)*threads + t (adjacent threads at adjacent elements: a CPU runs them
// as the lanes of one vector). Tiles wholly past m or n are skipped.
//
// With column tiles, each column tile's chunk of B is first copied (as f32, clamped to n) into a
// contiguous tile, kChunkTerms rows of the tile's columns, each thread its own columns (so no
// barrier): its row tiles then read B from one small block of memory instead of rows ldb apart,
// and only the copy is clamped at C's right edge.
void chunk_major_body(KernelBuilder& k, const MatmulViews& p, const Place& at, const MatmulTypes& t,
                      const MatmulSchedule& s, const MatmulStore& store) {
    const int outputs = s.tm * s.tn, tiles = s.bm / s.tm, threads = s.threads();
    const int width = s.row_columns();
    const bool packed = s.column_tiles > 1;
    Memory totals = k.shared(DType::f32, int64_t{s.bm} * s.bn, "totals");
    Var thread = k.let(k.thread_index(), "t");
    k.for_(0, s.column_tiles * tiles * outputs,
           [&](Expr i) { totals[i * threads + thread] = Expr(-0.0f); });
    auto total_at = [&](const Expr& column_tile, const Expr& tile) {
        return [&, column_tile, tile](int i) {
            return ((column_tile * tiles + tile) * outputs + i) * threads + thread;
        };
    };
    Var live = k.let(min(Expr(tiles), (p.m - at.i0 + (s.tm - 1)) / s.tm), "tiles");
    // The column tiles not wholly past n (one tile: no loop).
    auto each_column_tile = [&](const std::function<void(Expr)>& body) {
        if (!packed) return body(Expr(0));
        Var live_columns =
            k.let(min(Expr(s.column_tiles), (p.n - at.j0 + (width - 1)) / width), "column_tiles");
        k.for_(0, live_columns, body);
    };
    auto tile_at = [&](const Expr& column_tile, const Expr& tile) {
        Place sub = at;
        sub.i0 = k.let(at.i0 + tile * s.tm, "i0");
        if (packed) sub.j0 = k.let(at.j0 + column_tile * width, "j0");
        return sub;
    };
    auto chunk_of_tile = [&](const Expr& column_tile, const Expr& tile, const Expr& c0,
                             const std::function<void(Accumulators&, const Expr&)>& term) {
        Accumulators acc(k, s.tm, s.tn, totals, total_at(column_tile, tile));
        k.for_(c0, min(c0 + kChunkTerms, p.k), [&](Expr q) { term(acc, q); });
        acc.close_chunk();
    };
    // Each tile's rows of A (the same in every thread) in its turn, clamped to m.
    auto a_reads = [&](const Expr& column_tile, const Expr& tile, const std::vector<Var>& cols) {
        return reads_of(p, t, a_rows(k, p, tile_at(column_tile, tile), t, s, true), cols);
    };
    // With column tiles, the copy of B's chunk: term q's element of the tile for the thread's
    // c-th column, in i64 (sums and products of i32 values never wrap there, so a CPU's compiler
    // sees adjacent lanes' as adjacent).
    std::optional<Memory> b_tile;
    std::vector<Var> in_tile;
    if (packed) {
        b_tile = k.shared(DType::f32, int64_t{kChunkTerms} * width, "b_tile");
        for (int c = 0; c < s.tn; ++c)
            in_tile.push_back(k.let(cast(DType::i64, at.column_in_tile(s, c)), "b_at"));
    }
    auto tile_element = [&](const Expr& q, const Expr& c0, size_t c) {
        return (cast(DType::i64, q) - cast(DType::i64, c0)) * int64_t{width} + in_tile[c];
    };
    // Copies a column tile's chunk of B into the tile: inside C's columns a uniform shift of the
    // block's first columns, at C's right edge the tile's own columns clamped.
    auto copy_chunk = [&](const Expr& column_tile, const Expr& c0, bool clamp_columns,
                          const std::vector<Var>& first) {
        std::optional<Expr> shift;
        if (!clamp_columns) {
            const Expr column_step = cast(DType::i64, Expr(width)) *
                                     (t.b_transposed ? cast(DType::i64, p.ldb) : Expr(int64_t{1}));
            shift = k.let(cast(DType::i64, column_tile) * column_step, "b_shift");
        }
        const DirectReads copy = reads_of(
            p, t, {}, clamp_columns ? b_columns(k, p, tile_at(column_tile, 0), t, s, true) : first);
        k.for_(c0, min(c0 + kChunkTerms, p.k), [&](Expr q) {
            const std::vector<Expr> bv = copy.b_values(k, p, q, shift);
            for (size_t c = 0; c < bv.size(); ++c) (*b_tile)[tile_element(q, c0, c)] = bv[c];
        });
    };
    // B's columns once, outside the loops (a CPU then sees adjacent threads' columns as adjacent
    // addresses in every loop), clamped only in a block at C's right edge (with column tiles,
    // there each column tile's in its turn).
    auto terms = [&](bool clamp_columns) {
        std::vector<Var> cols;
        if (!packed || !clamp_columns) cols = b_columns(k, p, at, t, s, clamp_columns);
        k.for_(
            0, p.k,
            [&](Expr c0) {
                each_column_tile([&](Expr column_tile) {
                    if (packed) copy_chunk(column_tile, c0, clamp_columns, cols);
                    k.for_(0, live, [&](Expr tile) {
                        const DirectReads reads =
                            a_reads(column_tile, tile, packed ? std::vector<Var>{} : cols);
                        chunk_of_tile(column_tile, tile, c0, [&](Accumulators& acc, Expr q) {
                            if (!packed) return reads.add_term(k, p, acc, q);
                            // A's values (uniform) first, then B's from the copy, next to their
                            // use.
                            const std::vector<Expr> av = reads.a_values(k, p, q);
                            std::vector<Expr> bv;
                            for (size_t c = 0; c < in_tile.size(); ++c)
                                bv.push_back(k.let((*b_tile)[tile_element(q, c0, c)], "b"));
                            acc.add_term(av, bv);
                        });
                    });
                });
            },
            kChunkTerms);
    };
    k.if_(
        at.j0 + s.bn <= p.n, [&] { terms(false); }, [&] { terms(true); });
    each_column_tile([&](Expr column_tile) {
        k.for_(0, live, [&](Expr tile) {
            const auto where = total_at(column_tile, tile);
            store_tile(
                k, p, tile_at(column_tile, tile), s,
                [&](int r, int c) { return k.let(totals[where(r * s.tn + c)], "total"); }, store);
        });
    });
}

// The memo key of a kernel: every comptime value it is built from (the test-only break switch
// too, so a kernel built broken is never reused once the switch is off).
std::string kernel_key(const MatmulTypes& t, const MatmulSchedule& s) {
    return fmt::format("matmul/{}/{}/{}/{}/m{}n{}k{}t{}x{}s{}p{}c{}w{}x{}g{}x{}o{}b{}{}{}",
                       name(t.input), name(t.output), layout_name(t), s.name, s.bm, s.bn, s.bk,
                       s.tm, s.tn, s.staged, s.prefetch, s.spread, s.wm, s.wn, s.stages, s.split_k,
                       s.totals_in_memory, s.min_blocks,
                       s.chunk_major ? fmt::format("/chunk_major{}", s.column_tiles) : "",
                       break_switch("matmul_tile_edge") ? "/broken_edge" : "");
}

std::function<ir::Kernel()> builder(const MatmulTypes& t, const MatmulSchedule& s) {
    return [t, s] { return matmul_kernel(t, s); };
}

// ld 0 resolved to the dense leading dimension of a rows x cols view.
int64_t leading(const MatmulOperand& v, int64_t rows, int64_t cols) {
    return v.ld != 0 ? v.ld : (v.transposed ? rows : cols);
}

// The index of a view's last element (i64), and a check that the view lies in `count` elements.
void check_view(const char* what, const MatmulOperand& v, int64_t batch, int64_t rows, int64_t cols,
                size_t count) {
    if (v.offset < 0 || v.batch_stride < 0 || v.ld < 0)
        fail("matmul: {} view has offset {}, batch stride {}, ld {}; expected values >= 0", what,
             v.offset, v.batch_stride, v.ld);
    const int64_t ld = leading(v, rows, cols);
    if (ld > kMaxIndex || v.offset > kMaxIndex || v.batch_stride > kMaxIndex)
        fail("matmul: {} view has offset {}, batch stride {}, ld {}; expected each at most {}",
             what, v.offset, v.batch_stride, ld, kMaxIndex);
    const int64_t last = v.offset + (batch - 1) * v.batch_stride +
                         (v.transposed ? (cols - 1) * ld + (rows - 1) : (rows - 1) * ld + cols - 1);
    if (last >= static_cast<int64_t>(count))
        fail(
            "matmul: {} view of {} x {} x {}{} (offset {}, batch stride {}, ld {}) reaches element "
            "{}; expected it inside the buffer's {} elements",
            what, batch, rows, cols, v.transposed ? " transposed" : "", v.offset, v.batch_stride,
            ld, last, count);
    if (last > kMaxIndex)
        fail("matmul: {} view reaches element {}; expected at most {} (32-bit indices)", what, last,
             kMaxIndex);
}

// b's matrices copied into rows kPaddedRowBytes longer where the CPU reads them so (pads_b_rows;
// host memory there), and the view of the copy; nothing elsewhere.
struct PaddedB {
    std::optional<Buffer> copy;
    MatmulOperand view;
    int64_t matrices = 1;  // the copies of b's matrix (1 where every batch shares it)
};

PaddedB padded_b(Device& device, const Buffer& b, const MatmulOperand& bv, const MatmulShape& s) {
    const int64_t size = static_cast<int64_t>(size_of(b.dtype()));
    const int64_t ld = leading(bv, s.k, s.n);
    if (bv.transposed || !pads_b_rows(device, ld, size, s.m, s.k, false)) return {{}, bv};
    const int64_t padded_ld = s.n + kPaddedRowBytes / size;
    const int64_t matrices = bv.batch_stride == 0 ? 1 : s.batch;
    if (matrices * s.k * padded_ld > kMaxIndex) return {{}, bv};
    return {Buffer(device, b.dtype(), static_cast<size_t>(matrices * s.k * padded_ld)),
            {0, bv.batch_stride == 0 ? 0 : s.k * padded_ld, padded_ld, false},
            matrices};
}

// Copies b's rows into the padded copy (host memory: the CPU's buffers).
void copy_rows(Device& device, const Buffer& b, const MatmulOperand& bv, const MatmulShape& s,
               PaddedB& p) {
    const size_t size = size_of(b.dtype());
    const auto* from = reinterpret_cast<const char*>(device.address(b.memory()));
    auto* to = reinterpret_cast<char*>(device.address(p.copy->memory()));
    const int64_t ld = leading(bv, s.k, s.n);
    for (int64_t i = 0; i < p.matrices; ++i)
        for (int64_t r = 0; r < s.k; ++r)
            std::memcpy(to + size_t(i * p.view.batch_stride + r * p.view.ld) * size,
                        from + size_t(bv.offset + i * bv.batch_stride + r * ld) * size,
                        size_t(s.n) * size);
}

MatmulOperand dense_output(const MatmulShape& s) {
    return {0, s.m * s.n, s.n, false};
}

MatmulTypes types_of(const Buffer& a, const MatmulOperand& av, const MatmulOperand& bv, DType out) {
    return {a.dtype(), out, av.transposed, bv.transposed};
}

Tuned<Buffer> make_tuned(Device& device, const Buffer& a, const MatmulOperand& av, const Buffer& b,
                         const MatmulOperand& bv, const MatmulShape& shape, DType out,
                         MatmulClass cls) {
    const MatmulTypes t = types_of(a, av, bv, out);
    const std::vector<MatmulSchedule> points = matmul_points_for(device, cls, shape);
    const bool unsplit = points.size() < matmul_domain(device, cls).size();
    const bool on_tensor_cores = points.front().tensor_core();
    Tuned<Buffer> tuned("matmul",
                        fmt::format("batch={},m={},n={},k={},in={},out={},layout={}{}", shape.batch,
                                    shape.m, shape.n, shape.k, name(t.input), name(t.output),
                                    layout_name(t), on_tensor_cores ? ",class=tensor_core" : ""),
                        device);
    const VariantTable& table = memo_variant_table(
        fmt::format("matmul/{}/{}/{}{}{}", name(t.input), name(t.output), layout_name(t),
                    on_tensor_cores ? "/tensor_core" : "", unsplit ? "/unsplit" : ""),
        device.info().backend, "matmul", [&] {
            std::vector<NamedKernel> kernels;
            for (const auto& s : points)
                kernels.push_back({s.name, kernel_key(t, s), builder(t, s)});
            return kernels;
        });
    tuned.variants(
        table, [&device, &a, av, &b, bv, shape, out, points](size_t i) -> Tuned<Buffer>::Closure {
            return [&device, &a, av, &b, bv, shape, out, s = points[i]](int iters) {
                return matmul_bench(device, a, av, b, bv, shape, out, s, iters);
            };
        });
    return tuned;
}

}  // namespace

const std::vector<MatmulSchedule>& matmul_variants() {
    // Each point's name spells its knobs, so the two cannot drift apart.
    auto direct = [](int bm, int bn, int tm = 1, int tn = 1, bool spread = false) {
        const std::string tile = tm * tn > 1 ? fmt::format("_t{}x{}", tm, tn) : "";
        return MatmulSchedule{fmt::format("d{}x{}{}{}", bm, bn, tile, spread ? "_s" : ""),
                              bm,
                              bn,
                              1,
                              tm,
                              tn,
                              false,
                              false,
                              spread};
    };
    auto staged = [](int bm, int bn, int bk, int tm, int tn, bool prefetch = false,
                     bool split_k = false) {
        return MatmulSchedule{fmt::format("s{}x{}_k{}_t{}x{}{}{}", bm, bn, bk, tm, tn,
                                          prefetch ? "_p" : "", split_k ? "_sk" : ""),
                              bm,
                              bn,
                              bk,
                              tm,
                              tn,
                              true,
                              prefetch,
                              false,
                              split_k};
    };
    // A direct point's thread walking `tiles` of its row tiles chunk by chunk of k.
    auto chunk_major = [](MatmulSchedule s, int tiles) {
        s.chunk_major = true;
        s.bm *= tiles;
        s.name = fmt::format("d{}x{}_t{}x{}_s_kc", s.bm, s.bn, s.tm, s.tn);
        return s;
    };
    // A chunk-major point over `count` column tiles of its columns.
    auto in_column_tiles = [](MatmulSchedule s, int count) {
        s.column_tiles = count;
        s.bn *= count;
        s.name = fmt::format("d{}x{}_t{}x{}_s_kc{}", s.bm, s.bn, s.tm, s.tn, count);
        return s;
    };
    // A staged point with its totals in memory and, if min_blocks, that many blocks an SM.
    auto in_memory = [](MatmulSchedule s, int min_blocks = 0) {
        s.totals_in_memory = true;
        s.min_blocks = min_blocks;
        s.name += min_blocks > 0 ? fmt::format("_m_b{}", min_blocks) : "_m";
        return s;
    };
    static const std::vector<MatmulSchedule> variants = {
        direct(1, 64),
        direct(8, 32),
        staged(32, 32, 16, 2, 2),
        staged(16, 16, 16, 1, 1),
        staged(64, 64, 8, 4, 4),
        in_memory(staged(64, 64, 8, 8, 8)),
        staged(128, 64, 8, 8, 4),
        in_memory(staged(128, 128, 8, 8, 8), 2),
        staged(64, 64, 8, 8, 8, true),
        in_memory(staged(128, 128, 8, 8, 8, true), 2),
        direct(8, 128, 8, 4, true),
        staged(8, 32, 64, 1, 1, true),
        staged(32, 32, 64, 2, 2, true),
        staged(64, 64, 16, 8, 8, true),
        // The CPU's register tile: 6 rows x 4 vectors of 16 lanes (the strip of a 32-thread
        // block), 24 accumulators with B's 4 vectors and A's broadcasts in AVX-512's 32
        // registers (8 x 4 spills 12 accumulators to the stack every term).
        direct(6, 128, 6, 4, true),
        // The few-rows points split by k's chunks: a product with few outputs and a long k (a
        // token through a linear layer) gets ceil(k/256) times the blocks.
        staged(8, 32, 64, 1, 1, true, true),
        staged(32, 32, 64, 2, 2, true, true),
        staged(16, 64, 64, 2, 4, true, true),
        staged(32, 128, 32, 4, 8, true, true),
        // 8 x 8 threads with steps of 16 terms in blocks of 128 and of 256 (for large products).
        staged(128, 64, 16, 8, 8, true),
        in_memory(staged(128, 128, 16, 8, 8, true), 2),
        // The CPU's register tile over 16 row tiles, chunk by chunk of k: a chunk's 128 columns
        // of B (128 KiB) stay in the cache while the tiles pass (a large product's B panel does
        // not fit it whole).
        chunk_major(direct(6, 128, 6, 4, true), 16),
        // Chunk-major over column tiles of 8 threads of 6 x 2 (a strip of AVX2's 8 lanes: 12
        // accumulators, 2 vectors of B and a broadcast in its 16 registers, where 6 x 4 spills),
        // each column tile's chunk of B copied into a contiguous tile; 96 rows of A by 4 column
        // tiles, and 192 by 2 (B's copy read by twice the row tiles).
        in_column_tiles(chunk_major(direct(6, 16, 6, 2, true), 16), 4),
        in_column_tiles(chunk_major(direct(6, 16, 6, 2, true), 32), 2),
    };
    return variants;
}

const MatmulSchedule& matmul_variant(const std::string& n) {
    for (const auto* points : {&matmul_variants(), &matmul_tensor_core_variants()})
        for (const auto& s : *points)
            if (s.name == n) return s;
    fail("matmul: no schedule named '{}'", n);
}

const std::vector<MatmulSchedule>& matmul_all_variants() {
    static const std::vector<MatmulSchedule> all =
        both_classes(matmul_variants(), matmul_tensor_core_variants());
    return all;
}

const char* name(MatmulClass c) {
    return c == MatmulClass::tensor_core ? "tensor_core" : "exact";
}

void check_class(MatmulClass cls, DType input, const char* op) {
    if (cls == MatmulClass::tensor_core && !is_half(input))
        fail(
            "{}: the tensor-core class with {} inputs; expected f16 or bf16 (f32 inputs run "
            "in the exact class)",
            op, name(input));
}

std::span<const MatmulSchedule> matmul_domain(const Device& device, MatmulClass cls) {
    return class_points(matmul_all_variants(), matmul_variants().size(),
                        cls == MatmulClass::tensor_core && device.info().tensor_cores);
}

BlockIndex block_index(KernelBuilder& k, const std::optional<Expr>& batches, const Expr& m,
                       const Expr& n, const MatmulSchedule& s,
                       const std::optional<Expr>& block_at) {
    auto below_batches = [&](const Expr& b) { return batches ? min(b, *batches - 1) : b; };
    Var tiles_m = k.let((m + (s.bm - 1)) / s.bm, "tiles_m");
    Var tiles_n = k.let((n + (s.bn - 1)) / s.bn, "tiles_n");
    Var block = k.let(block_at ? *block_at : k.block_index(), "block");
    if (s.spread) {
        // Down a column panel first: consecutive blocks (one CPU thread's range) share their
        // bn columns of B, which stay in cache while A's rows stream past.
        Var tile_m = k.let(block % tiles_m, "tile_m");
        Var rest = k.let(block / tiles_m, "rest");
        Var tile_n = k.let(rest % tiles_n, "tile_n");
        Var batch = k.let(below_batches(rest / tiles_n), "batch");
        return {batch, tile_m, tile_n};
    }
    Var tile_n = k.let(block % tiles_n, "tile_n");
    Var rest = k.let(block / tiles_n, "rest");
    Var tile_m = k.let(rest % tiles_m, "tile_m");
    Var batch = k.let(below_batches(rest / tiles_m), "batch");
    return {batch, tile_m, tile_n};
}

ir::Kernel matmul_kernel(const MatmulTypes& t, const MatmulSchedule& s) {
    check_types(t);
    check_schedule(s);
    KernelBuilder k(
        fmt::format("matmul_{}_{}_{}_{}", name(t.input), name(t.output), layout_name(t), s.name),
        s.threads());
    const Params p = declare_params(k, t, s.split_k ? DType::f32 : t.output);
    require_contract(k, p, t);
    if (!s.split_k) {
        matmul_body(k, p, t, s,
                    [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& v) {
                        p.c[p.c_offset + batch * p.c_batch + row * p.ldc + col] =
                            t.output == DType::f32 ? v : cast(t.output, v);
                    });
        return k.finish();
    }
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    const Expr chunks = (p.k + (kChunkTerms - 1)) / kChunkTerms;
    const Expr all_sums = wide(chunks) * wide(p.batch) * wide(p.m) * wide(p.n);
    k.require(p.c_offset == 0 && p.c_batch == p.m * p.n && p.ldc == p.n,
              "a split point's c is a dense scratch (c_offset 0, c_batch m*n, ldc n)");
    k.require(
        all_sums <= wide(p.c.len()) && all_sums <= kMaxIndex,
        fmt::format("c holds ceil(k/{}) x batch x m x n sums, at most {}", kChunkTerms, kMaxIndex));
    Var outputs = k.let(p.batch * p.m * p.n, "outputs");
    matmul_chunks_body(k, p, t, s,
                       [&](const Expr& chunk, const Expr& batch, const Expr& row, const Expr& col,
                           const Expr& sum) {
                           p.c[chunk * outputs + batch * p.c_batch + row * p.ldc + col] = sum;
                       });
    return k.finish();
}

void matmul_chunks_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                        const MatmulSchedule& s, const MatmulChunkStore& store) {
    // Block x runs the body on chunk x / tiles of k for tile x % tiles, the operands' views
    // moved to the chunk's first term.
    Var tiles = k.let(p.batch * ((p.m + (s.bm - 1)) / s.bm) * ((p.n + (s.bn - 1)) / s.bn), "tiles");
    Var chunk = k.let(k.block_index() / tiles, "chunk");
    Var c0 = k.let(chunk * kChunkTerms, "c0");
    MatmulViews v = p;
    v.a_offset = p.a_offset + c0 * (t.a_transposed ? p.lda : Expr(1));
    v.b_offset = p.b_offset + c0 * (t.b_transposed ? Expr(1) : p.ldb);
    v.k = min(p.k - c0, Expr(kChunkTerms));
    v.block = k.block_index() % tiles;
    matmul_body(k, v, t, s,
                [&](const Expr& batch, const Expr& row, const Expr& col, const Expr& sum) {
                    store(chunk, batch, row, col, sum);
                });
}

Expr chunk_total(KernelBuilder& k, const Expr& chunks, const std::function<Expr(Expr)>& sum_of) {
    // From -0, so that the total is s_0 as it is, then s_0 + s_1, ...
    Var total = k.let(DType::f32, -0.0f, "total");
    k.for_(0, chunks, [&](Expr ch) { total = total + sum_of(ch); });
    return total;
}

ir::Kernel matmul_chunk_sum_kernel(DType output) {
    if (!is_input_float(output))
        fail("matmul_chunk_sum_kernel: output {}; expected f32, f16 or bf16", name(output));
    constexpr int kThreads = 256;
    KernelBuilder k(fmt::format("matmul_chunk_sum_{}", name(output)), kThreads);
    Memory partial = k.input("partial", DType::f32);
    Memory c = k.output("c", output);
    Expr count = k.scalar("count", DType::i32), chunks = k.scalar("chunks", DType::i32);
    auto wide = [](const Expr& e) { return cast(DType::i64, e); };
    k.require(count >= 1 && chunks >= 1 && count <= static_cast<int32_t>(kMaxIndex - kThreads),
              fmt::format("count and chunks are >= 1, count at most {}", kMaxIndex - kThreads));
    k.require(wide(count) * wide(chunks) <= wide(partial.len()) &&
                  wide(count) * wide(chunks) <= kMaxIndex,
              "partial holds chunks x count sums");
    k.require(wide(count) <= wide(c.len()), "c holds count elements");
    Var i = k.let(k.block_index() * kThreads + k.thread_index(), "i");
    k.if_(i < count, [&] {
        const Expr total = chunk_total(k, chunks, [&](Expr ch) { return partial[ch * count + i]; });
        c[i] = output == DType::f32 ? total : cast(output, total);
    });
    return k.finish();
}

void matmul_body(KernelBuilder& k, const MatmulViews& p, const MatmulTypes& t,
                 const MatmulSchedule& s, const MatmulStore& store) {
    check_types(t);
    check_schedule(s);
    if (s.tensor_core()) return tensor_core_body(k, p, t, s, store);
    const Place at = place(k, p, s);
    ask_min_blocks(k, s.min_blocks);
    if (s.chunk_major) return chunk_major_body(k, p, at, t, s, store);
    Accumulators acc(k, s.tm, s.tn, s.totals_in_memory ? Totals::memory : Totals::registers);
    if (s.staged)
        staged_terms(k, p, at, t, s, acc);
    else
        direct_terms(k, p, at, t, s, acc);
    store_tile(
        k, p, at, s, [&](int r, int c) { return acc.value(r, c); }, store);
}

bool pads_b_rows(const Device& device, int64_t ld, int64_t size, int64_t m, int64_t k,
                 bool copied) {
    constexpr int64_t kAliasingRowBytes = 1024, kMinRows = 256, kMinTerms = 1024;
    return device.info().backend == Backend::cpu && ld > 0 && k > 0 &&
           ld * size % kAliasingRowBytes == 0 && (copied || (m >= kMinRows && k >= kMinTerms));
}

int64_t matmul_grid(const MatmulShape& shape, const MatmulSchedule& s) {
    return shape.batch * ceil_div(shape.m, s.bm) * ceil_div(shape.n, s.bn) *
           (s.split_k ? contraction_chunks(shape.k) : 1);
}

bool matmul_point_applies(const MatmulSchedule& s, const MatmulShape& shape) {
    constexpr int64_t kMaxScratchBytes = int64_t{256} << 20;
    return !s.split_k ||
           contraction_chunks(shape.k) * shape.batch * shape.m * shape.n * 4 <= kMaxScratchBytes;
}

std::vector<MatmulSchedule> matmul_points_for(const Device& device, MatmulClass cls,
                                              const MatmulShape& shape) {
    std::vector<MatmulSchedule> points;
    for (const MatmulSchedule& s : matmul_domain(device, cls))
        if (!s.split_k || (contraction_chunks(shape.k) >= 2 && matmul_point_applies(s, shape)))
            points.push_back(s);
    return points;
}

std::vector<Arg> matmul_scalars(const MatmulShape& sh, const MatmulOperand& a,
                                const MatmulOperand& b, const MatmulOperand& c) {
    auto i32 = [](int64_t v) { return Arg(static_cast<int32_t>(v)); };
    return {i32(sh.batch),
            i32(sh.m),
            i32(sh.n),
            i32(sh.k),
            i32(a.offset),
            i32(a.batch_stride),
            i32(leading(a, sh.m, sh.k)),
            i32(b.offset),
            i32(b.batch_stride),
            i32(leading(b, sh.k, sh.n)),
            i32(c.offset),
            i32(c.batch_stride),
            i32(leading(c, sh.m, sh.n))};
}

void matmul_check(const Buffer& a, const MatmulOperand& av, const Buffer& b,
                  const MatmulOperand& bv, const MatmulShape& s, DType out) {
    if (s.batch < 1 || s.m < 1 || s.n < 1 || s.k < 1)
        fail("matmul: shape batch={} m={} n={} k={}; expected every size >= 1", s.batch, s.m, s.n,
             s.k);
    if (s.m > kMaxExtent || s.n > kMaxExtent || s.k > kMaxIndex || !fits_index(s.batch, s.m, s.n))
        fail(
            "matmul: shape batch={} m={} n={} k={}; expected m and n at most {}, k and batch*m*n "
            "at most {}",
            s.batch, s.m, s.n, s.k, kMaxExtent, kMaxIndex);
    if (!is_input_float(a.dtype()))
        fail("matmul: a is {}; expected f32, f16 or bf16", name(a.dtype()));
    if (b.dtype() != a.dtype())
        fail("matmul: b is {} but a is {}; expected the same dtype", name(b.dtype()),
             name(a.dtype()));
    check_types({a.dtype(), out, av.transposed, bv.transposed});
    if (&a.device() != &b.device())
        fail("matmul: a lives on {} but b on {}; expected one device", a.device().info().id,
             b.device().info().id);
    check_view("a", av, s.batch, s.m, s.k, a.count());
    check_view("b", bv, s.batch, s.k, s.n, b.count());
}

Timed<Buffer> matmul_bench(Device& device, const Buffer& a, const MatmulOperand& av,
                           const Buffer& b, const MatmulOperand& bv, const MatmulShape& shape,
                           DType out, const MatmulSchedule& schedule, int iters) {
    matmul_check(a, av, b, bv, shape, out);
    check_schedule(schedule);
    if (schedule.tensor_core()) check_class(MatmulClass::tensor_core, a.dtype());
    if (&a.device() != &device)
        fail("matmul: a lives on {}; expected {}", a.device().info().id, device.info().id);
    if (!matmul_point_applies(schedule, shape))
        fail(
            "matmul: split point {} for batch={} m={} n={} k={} needs a scratch of {} chunk sums "
            "per output; expected at most 256 MiB of them (such a product has outputs enough "
            "without a split)",
            schedule.name, shape.batch, shape.m, shape.n, shape.k, contraction_chunks(shape.k));
    const MatmulTypes t = types_of(a, av, bv, out);
    auto compiled = memo_compiled(device, kernel_key(t, schedule), builder(t, schedule));
    const int64_t outputs = shape.batch * shape.m * shape.n;
    Buffer c(device, out, static_cast<size_t>(outputs));
    // A split point's chunk sums, and the kernel that adds them into c.
    std::optional<Buffer> partial;
    std::shared_ptr<CompiledKernel> chunk_sum;
    std::vector<Arg> sum_args;
    const int64_t chunks = contraction_chunks(shape.k);
    if (schedule.split_k) {
        partial.emplace(device, DType::f32, static_cast<size_t>(chunks * outputs));
        chunk_sum = memo_compiled(device, fmt::format("matmul_chunk_sum/{}", name(out)),
                                  [out] { return matmul_chunk_sum_kernel(out); });
        sum_args = {*partial, c, Arg(static_cast<int32_t>(outputs)),
                    Arg(static_cast<int32_t>(chunks))};
    }
    // The copy, where there is one, is part of every timed call.
    PaddedB padded = padded_b(device, b, bv, shape);
    std::vector<Arg> args{a, padded.copy ? *padded.copy : b, partial ? *partial : c};
    for (const Arg& s : matmul_scalars(shape, av, padded.view, dense_output(shape)))
        args.push_back(s);
    const int64_t grid = matmul_grid(shape, schedule);
    const double ms = time_dispatches(device, iters, [&] {
        if (padded.copy) copy_rows(device, b, bv, shape, padded);
        compiled->launch(grid, args);
        if (chunk_sum) chunk_sum->launch(ceil_div(outputs, int64_t{256}), sum_args);
    });
    return {std::move(c), ms};
}

Tuned<Buffer> matmul_tuned(Device& device, const Buffer& a, const MatmulOperand& av,
                           const Buffer& b, const MatmulOperand& bv, const MatmulShape& shape,
                           DType out, MatmulClass cls) {
    matmul_check(a, av, b, bv, shape, out);
    check_class(cls, a.dtype());
    return make_tuned(device, a, av, b, bv, shape, out, cls);
}

Buffer matmul(Device& device, const Buffer& a, const MatmulOperand& av, const Buffer& b,
              const MatmulOperand& bv, const MatmulShape& shape, DType out, MatmulClass cls,
              Tuner& tuner) {
    matmul_check(a, av, b, bv, shape, out);
    check_class(cls, a.dtype());
    if (&a.device() != &device)
        fail("matmul: a lives on {}; expected {}", a.device().info().id, device.info().id);
    Tuned<Buffer> tuned = make_tuned(device, a, av, b, bv, shape, out, cls);
    // Each point's kernel is compiled on its own (memo_compiled, when the tuner first runs it):
    // one cache entry per kernel, shared by every shape, layout set and caller that needs it.
    return tuned.run(tuner);
}

Buffer matmul(Device& device, const DenseMatrix& a, const DenseMatrix& b, DType out,
              MatmulClass cls, Tuner& tuner) {
    auto operand_text = [](const DenseMatrix& d) {
        return fmt::format("{} x {} x {}{}", d.batch, d.rows, d.cols,
                           d.transposed ? " transposed" : "");
    };
    for (const DenseMatrix* d : {&a, &b}) {
        const char* what = d == &a ? "a" : "b";
        if (d->batch < 1 || d->rows < 1 || d->cols < 1)
            fail("matmul: {} is {}; expected every size >= 1", what, operand_text(*d));
        if (!fits_index(d->batch, d->rows, d->cols) ||
            static_cast<int64_t>(d->buffer.count()) != d->batch * d->rows * d->cols)
            fail("matmul: {} has {} elements; expected batch x rows x cols = {}", what,
                 d->buffer.count(), operand_text(*d));
    }
    // The operands' shapes as used: A is m x k, B is k x n.
    const int64_t m = a.transposed ? a.cols : a.rows, ka = a.transposed ? a.rows : a.cols;
    const int64_t kb = b.transposed ? b.cols : b.rows, n = b.transposed ? b.rows : b.cols;
    if (ka != kb)
        fail(
            "matmul: inner dimensions differ: a ({}) is m x k = {} x {}, b ({}) is k x n = {} x "
            "{}; expected b's k = {}",
            operand_text(a), m, ka, operand_text(b), kb, n, ka);
    if (a.batch != b.batch && a.batch != 1 && b.batch != 1)
        fail("matmul: a has {} batches and b {}; expected equal counts, or 1 for a shared operand",
             a.batch, b.batch);
    const MatmulShape shape{std::max(a.batch, b.batch), m, n, ka};
    const MatmulOperand av{0, a.batch == 1 ? 0 : a.rows * a.cols, 0, a.transposed};
    const MatmulOperand bv{0, b.batch == 1 ? 0 : b.rows * b.cols, 0, b.transposed};
    return matmul(device, a.buffer, av, b.buffer, bv, shape, out, cls, tuner);
}

}  // namespace kiln::ops
