// matvec_q8: the kernel in the DSL, its variant table, the bench and the tuned entry point.
#include "kiln/ops/matvec_q8.hpp"
#include "base/ceil_div.hpp"
#include "base/checked_mul.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/kernel_parts.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "kiln/compile.hpp"

namespace kiln::ops {

namespace {

using enum MatvecForm;

constexpr std::array<MatvecVariant, 23> kVariants{{
    {"b64_v1", {.block = 64, .form = pair_per_lane}},
    {"b64_v4", {.block = 64, .unroll = 4, .form = pair_per_lane}},
    {"b128_v2", {.block = 128, .unroll = 2, .form = pair_per_lane}},
    {"b256_v8", {.block = 256, .unroll = 8, .form = pair_per_lane}},
    {"b128_t8_v2", {.block = 128, .threads = 8, .unroll = 2, .form = pair_per_lane}},
    {"s128_v1", {.block = 128, .form = staged, .min_blocks = 6}},
    {"s128_v2", {.block = 128, .unroll = 2, .form = staged, .min_blocks = 6}},
    {"s128_v1_s", {.block = 128, .form = staged, .streaming = true, .min_blocks = 6}},
    {"s128_v2_s", {.block = 128, .unroll = 2, .form = staged, .streaming = true, .min_blocks = 6}},
    {"s256_v1", {.block = 256, .form = staged, .min_blocks = 3}},
    {"s64_v1", {.block = 64, .form = staged}},
    {"s64_v2", {.block = 64, .unroll = 2, .form = staged}},
    {"s256_v2", {.block = 256, .unroll = 2, .form = staged, .min_blocks = 3}},
    {"w64_v1_r1", {.block = 64, .form = warp_words}},
    {"w128_v1_r1", {.block = 128, .form = warp_words}},
    {"w128_v1_r4", {.block = 128, .form = warp_words, .rows_per_group = 4}},
    {"w256_v1_r2", {.block = 256, .form = warp_words, .rows_per_group = 2}},
    {"p256_v1_c2_k16k", {.block = 256, .form = streamed, .blocks_per_unit = 2, .max_k = 16384}},
    {"p512_v1_c1_k4k", {.block = 512, .form = streamed, .blocks_per_unit = 1, .max_k = 4096}},
    {"c4", {.block = 4, .threads = 1, .form = cpu_rows}},
    {"c16", {.block = 16, .threads = 1, .form = cpu_rows}},
    {"c4_r4", {.block = 4, .threads = 1, .form = cpu_rows, .rows_per_group = 4}},
    {"c8_r8", {.block = 8, .threads = 1, .form = cpu_rows, .rows_per_group = 8}},
}};

const char* form_name(MatvecForm f) {
    switch (f) {
        case pair_per_lane:
            return "pair_per_lane";
        case staged:
            return "staged";
        case warp_words:
            return "warp_words";
        case streamed:
            return "streamed";
        case cpu_rows:
            return "cpu_rows";
    }
    return "?";
}

// Words of each row that one round covers: kMatvecQ8Lanes * unroll pairs.
constexpr int round_words(const MatvecSchedule& s) {
    return kMatvecQ8Lanes * s.unroll * kQ8PairWords;
}

// Words of x a streamed schedule's tile holds.
constexpr int64_t x_tile_words(const MatvecSchedule& s) {
    return int64_t{s.max_k} / 64 * kQ8PairWords;
}

int64_t shared_bytes(const MatvecSchedule& s) {
    const int64_t rows_per_block = s.block / s.threads;
    switch (s.form) {
        case pair_per_lane:
            return 0;
        case staged:
            return (rows_per_block + 1) * round_words(s) * 4;
        case warp_words:  // a product and the raw word of W per word
            return rows_per_block * 2 * round_words(s) * 4;
        case streamed:  // a round of W per warp, and all of x
            return (rows_per_block * round_words(s) + x_tile_words(s)) * 4;
        case cpu_rows:
            return 0;
    }
    return 0;
}

void check_schedule(const MatvecSchedule& s) {
    check_row_threads("matvec_q8", s.threads, kMatvecQ8Lanes, s.block);
    if (s.unroll < 1 || s.unroll > 16)
        fail("matvec_q8: schedule unroll {}; expected 1 to 16", s.unroll);
    const int form_threads = s.form == cpu_rows ? 1 : kMatvecQ8Lanes;
    if (s.form != pair_per_lane && s.threads != form_threads)
        fail("matvec_q8: schedule form {} with {} threads per row; expected {}", form_name(s.form),
             s.threads, form_threads);
    if (s.form == cpu_rows && s.unroll != 1)
        fail("matvec_q8: cpu_rows schedule with unroll {}; expected 1", s.unroll);
    const bool rows_in_turn = s.form == warp_words || s.form == cpu_rows;
    if (s.rows_per_group < 1 || s.rows_per_group > (s.form == cpu_rows ? 8 : 64) ||
        (!rows_in_turn && s.rows_per_group != 1))
        fail("matvec_q8: {} schedule with {} rows per warp; expected {}", form_name(s.form),
             s.rows_per_group,
             s.form == warp_words ? "1 to 64" : (s.form == cpu_rows ? "1 to 8" : "1"));
    if (s.form == streamed
            ? (s.blocks_per_unit < 1 || s.blocks_per_unit > 8 || s.max_k < 64 || s.max_k % 64 != 0)
            : (s.blocks_per_unit != 0 || s.max_k != 0))
        fail(
            "matvec_q8: {} schedule with {} blocks per compute unit and max_k {}; expected "
            "{}",
            form_name(s.form), s.blocks_per_unit, s.max_k,
            s.form == streamed ? "1 to 8 blocks and a positive multiple of 64" : "0 and 0");
    if (s.min_blocks < 0 || s.min_blocks > ir::kMaxMinBlocksPerUnit)
        fail("matvec_q8: schedule min_blocks {}; expected 0 to {}", s.min_blocks,
             ir::kMaxMinBlocksPerUnit);
    const int64_t bytes = shared_bytes(s);
    if (bytes > kMaxSharedBytes)
        fail(
            "matvec_q8: {} schedule block {} unroll {} needs {} bytes of shared memory; "
            "expected at most {}",
            form_name(s.form), s.block, s.unroll, bytes, kMaxSharedBytes);
}

// A pair of 17 words (see pair_value), each named once.
using PairWords = std::array<Expr, kQ8PairWords>;

PairWords load_pair(KernelBuilder& k, const Memory& m, const Expr& base, const char* name) {
    PairWords v{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < kQ8PairWords; ++i)
        v[static_cast<size_t>(i)] = k.let(m[base + i], fmt::format("{}{}", name, i));
    return v;
}

Expr at(const PairWords& v, int i) {
    return v[static_cast<size_t>(i)];
}

// acc + the dot product of the four int8 quants in a word of W and those in x's word.
Expr word_dot(const Expr& w_word, const Expr& x_word, const Expr& acc) {
    return dp4a(bitcast(DType::i32, w_word), bitcast(DType::i32, x_word), acc);
}

// W's words 0 and 8 with their scale halves masked to zero: the block-0 quants they hold.
Expr word0_quants(const Expr& w0) {
    return w0 & 0xffff0000u;
}
Expr word8_quants(const Expr& w8) {
    return w8 & 0x0000ffffu;
}

// A pair's value from its blocks' integer sums and the scale halves of words 0 and 8 (see the
// header: two rounded products per block, then one rounded add).
Expr pair_from_sums(KernelBuilder& k, const Expr& w0, const Expr& w8, const Expr& x0,
                    const Expr& x8, const Expr& isum0, const Expr& isum1) {
    Expr d0 = half_scale(w0 & 0xffffu) * half_scale(x0 & 0xffffu);
    Expr d1 = half_scale(w8 >> 16u) * half_scale(x8 >> 16u);
    Var p0 = k.let(d0 * cast(DType::f32, isum0), "p0");
    Var p1 = k.let(d1 * cast(DType::f32, isum1), "p1");
    return p0 + p1;
}

// The value of one Q8_0 block pair of W (17 words) against x's pair, which has the same layout:
// word 0 = d0 | q0[0..1] << 16, q0 runs 2 bytes off word alignment through the low half of word
// 8, whose high half is d1, and q1 is words 9..16. W's and x's quants sit at the same byte
// places, so each word's dp4a multiplies matching quants: words 1..7 and 9..16 whole, words 0
// and 8 with W's scale half masked to zero. The sums are exact in int32, so no realignment.
Expr pair_dot(KernelBuilder& k, const PairWords& ww, const PairWords& xx) {
    Expr isum0 = word_dot(word0_quants(at(ww, 0)), at(xx, 0), Expr(0));
    for (int i = 1; i < 8; ++i) isum0 = word_dot(at(ww, i), at(xx, i), isum0);
    isum0 = word_dot(word8_quants(at(ww, 8)), at(xx, 8), isum0);
    Expr isum1 = Expr(0);
    for (int i = 9; i < kQ8PairWords; ++i) isum1 = word_dot(at(ww, i), at(xx, i), isum1);
    return pair_from_sums(k, at(ww, 0), at(ww, 8), at(xx, 0), at(xx, 8), isum0, isum1);
}

// The dot product of the pair of W at word w_base with the pair of x at x_base, each read once.
Expr pair_value(KernelBuilder& k, const Memory& w, const Expr& w_base, const Memory& x,
                const Expr& x_base) {
    return pair_dot(k, load_pair(k, w, w_base, "w"), load_pair(k, x, x_base, "x"));
}

// One run of words to copy into a shared tile (see copy_words): from word `from` (i64) of src
// into `tile` from `to` on, by `threads` threads of which this is thread `t`.
struct WordCopy {
    const Memory& src;
    Expr from;
    const Memory& tile;
    Expr to;
    int threads;
    Expr t;
};

// Copies `words` (a multiple of 4) consecutive words for each run: thread t takes the groups of
// 4 words t, t+threads, ... with one vector load each, 16 bytes wide where `from` is 16-byte
// aligned (in W when k % 256 == 0: a row is then 17*k/64 words, a multiple of 4). Every load of
// every run is issued before the first store waits for one, so they are all in flight at once.
// That includes a run's last, partial step, where only some threads have a group: the others
// load the run's last group again (in bounds, and a line the warp fetches anyway) and do not
// store it. Were that load guarded, the compiler would put it in one branch with its store, which
// waits for it there, after the other stores have waited for theirs.
void copy_words(KernelBuilder& k, const std::vector<WordCopy>& runs, int words) {
    const int groups = words / 4;
    struct Group {
        const WordCopy* run;
        Expr tile_at;
        int offset;  // words from the thread's first group
        std::vector<Var> v;
        std::optional<Expr> has;  // set where only some threads have the group
    };
    std::vector<Group> loaded;
    for (const WordCopy& run : runs) {
        Var src_at = k.let(run.from + cast(DType::i64, run.t * 4), "src_at");
        Var tile_at = k.let(run.to + run.t * 4, "tile_at");
        for (int c = 0; c * run.threads < groups; ++c) {
            const int offset = c * run.threads * 4;
            if ((c + 1) * run.threads <= groups) {
                loaded.push_back({&run,
                                  tile_at,
                                  offset,
                                  k.load_vector(run.src, src_at + offset, 4, "word"),
                                  {}});
            } else {
                Expr group = min(run.t + c * run.threads, Expr(groups - 1));
                Var at = k.let(run.from + cast(DType::i64, group * 4), "src_at");
                loaded.push_back({&run, tile_at, offset, k.load_vector(run.src, at, 4, "word"),
                                  run.t + c * run.threads < groups});
            }
        }
    }
    for (const Group& g : loaded) {
        auto store = [&] {
            for (int j = 0; j < 4; ++j)
                g.run->tile[g.tile_at + (g.offset + j)] = g.v[static_cast<size_t>(j)];
        };
        if (g.has)
            k.if_(*g.has, store);
        else
            store();
    }
}

// The parameters w, x (Q8_0 bytes viewed as `word`: u32, or i8 for cpu_rows) and y, with the
// launch contract: x is whole block pairs and w a row of x's length per y element.
struct Params {
    Memory w, x, y;
};

Params q8_params(KernelBuilder& k, const MatvecSchedule& s, DType word) {
    auto w = k.input("w", word);
    if (s.streaming) k.streaming(w);
    auto x = k.input("x", word);
    auto y = k.output("y", DType::f32);
    const int64_t pair = word == DType::i8 ? 2 * kQ8BlockBytes : kQ8PairWords;
    k.require(x.len() % pair == 0 && w.len() == y.len() * x.len(),
              fmt::format("w holds rows of x's Q8_0 block pairs ({} {} each), one row per y "
                          "element",
                          pair, word == DType::i8 ? "bytes" : "words"));
    return {w, x, y};
}

// What the staged and warp_words forms share: the parameters, and a warp per row (slot `slot`
// of the block's rows_per_block), the row clamped so every thread reaches the barriers.
struct WarpRow {
    Memory w, x, y;
    Expr pairs, last, lane, slot, group, row, w_row;  // named once each (k.let)
};

WarpRow warp_row(KernelBuilder& k, int rows_per_block, const MatvecSchedule& s) {
    auto [w, x, y] = q8_params(k, s, DType::u32);
    Var pairs = k.let(x.len() / kQ8PairWords, "pairs");
    Var last = k.let(max(x.len() - 1, 0), "last");
    Var lane = k.let(k.thread_index() & (kMatvecQ8Lanes - 1), "lane");
    Var slot = k.let(k.thread_index() >> std::countr_zero(unsigned{kMatvecQ8Lanes}), "slot");
    Var group = k.let(k.block_index() * rows_per_block + slot, "group");
    Var row = k.let(min(group.expr(), max(y.len() - 1, 0)), "row");
    Var w_row = k.let(row * x.len(), "w_row");
    return {w, x, y, pairs, last, lane, slot, group, row, w_row.expr()};
}

// Folds the 32 lane partials of a row (thread t of the row's warp holds lane t's sum of its
// pairs, in order, from +0) with the canonical fold's tree and stores y[row]. A 32-lane fold
// whose element t is thread t's partial: 0 + partial == partial, since a lane's sum from +0 is
// never -0.
void store_lane_partials(KernelBuilder& k, const Var& partial, const WarpRow& r, const Expr& row,
                         const Expr& valid) {
    Fold tree = Fold::sum().lanes(kMatvecQ8Lanes).chunk(1).threads(kMatvecQ8Lanes);
    Var acc = k.fold(DType::f32, kMatvecQ8Lanes, tree, [&](Expr) -> Expr { return partial; });
    k.if_(valid && r.lane == 0, [&] { r.y[row] = acc; });
}

// The round loop of both forms: each round covers 32*unroll pairs of the row; `stage(offset)`
// fills the shared arrays from the round's words (offset = the round's first word in the row),
// `sync` separates the phases, then lane t adds the round's pairs t, t+32, ... that exist to its
// partial, in order: `pair(offset, local)` is the value of the round's pair `local`.
void for_each_round(KernelBuilder& k, const MatvecSchedule& s, const WarpRow& r, Var& partial,
                    const std::function<void(const Expr&)>& stage,
                    const std::function<void()>& sync,
                    const std::function<Expr(const Expr&, const Expr&)>& pair) {
    const int round = kMatvecQ8Lanes * s.unroll;
    k.for_(
        0, r.pairs,
        [&](Expr base) {
            Var offset = k.let(base * kQ8PairWords, "offset");
            stage(offset);
            sync();
            for (int u = 0; u < s.unroll; ++u) {
                Var local = k.let(r.lane + u * kMatvecQ8Lanes, "local");
                k.if_(base + local < r.pairs, [&] { partial = partial + pair(offset, local); });
            }
            sync();  // the round's arrays are read before the next round writes them
        },
        round);
}

// The staged form: rounds of 32*unroll pairs; the block copies its rows' words and x's words of
// the round into shared tiles (consecutive threads, consecutive words), then lane t (thread t of
// its row's warp) adds pairs t, t+32, ... of the round to its partial in order. The partials are
// exactly the canonical fold's lanes (store_lane_partials).
ir::Kernel staged_kernel(const MatvecSchedule& s) {
    const int rows_per_block = s.block / kMatvecQ8Lanes;
    const int round = kMatvecQ8Lanes * s.unroll;  // pairs per round
    const int words = round * kQ8PairWords;       // words per row per round
    KernelBuilder k(fmt::format("matvec_q8_s{}_v{}", s.block, s.unroll), s.block);
    if (s.min_blocks > 0) k.min_blocks_per_unit(s.min_blocks);
    const WarpRow r = warp_row(k, rows_per_block, s);
    auto w_tile = k.shared(DType::u32, int64_t{rows_per_block} * words, "w_tile");
    auto x_tile = k.shared(DType::u32, words, "x_tile");
    Var tile_row = k.let(r.slot * words, "tile_row");
    Var partial = k.let(DType::f32, 0.0f, "partial");
    auto stage = [&](const Expr& offset) {
        // A round inside the row (all but a ragged last one) is copied in 16-byte loads
        // (copy_words), x's first: its lines are in the L2, so its stores wait least. A ragged
        // last round is copied a word at a time, lane t taking words t,
        // t+32, ...; words past the row's end are clamped copies no lane reads.
        auto whole_round = [&] {
            copy_words(k,
                       {{r.x, cast(DType::i64, offset), x_tile, 0, s.block, k.thread_index()},
                        {r.w, cast(DType::i64, r.w_row + offset), w_tile, tile_row, kMatvecQ8Lanes,
                         r.lane}},
                       words);
        };
        auto ragged_round = [&] {
            for (int c = 0; c < words / kMatvecQ8Lanes; ++c) {
                Expr i = r.lane + c * kMatvecQ8Lanes;
                w_tile[tile_row + i] = r.w[r.w_row + min(offset + i, r.last)];
            }
            for (int c = 0; c < static_cast<int>(ceil_div(words, s.block)); ++c) {
                Expr i = k.thread_index() + c * s.block;
                auto copy = [&] { x_tile[i] = r.x[min(offset + i, r.last)]; };
                if ((words % s.block) == 0)
                    copy();
                else
                    k.if_(i < words, copy);
            }
        };
        k.if_(offset + words <= r.x.len(), whole_round, ragged_round);
    };
    for_each_round(
        k, s, r, partial, stage, [&] { k.barrier(); },
        [&](const Expr&, const Expr& local) -> Expr {
            Var at = k.let(local * kQ8PairWords, "at");
            return pair_value(k, w_tile, tile_row + at, x_tile, at);
        });
    store_lane_partials(k, partial, r, r.row, r.group < r.y.len());
    return k.finish();
}

// A warp per row (see MatvecForm::warp_words). Round r covers pairs [r*R, r*R + R) of the row,
// R = 32*unroll, i.e. R*17 consecutive words: lane t loads words t, t+32, ... of W and of x, so
// each warp load is 128 contiguous bytes. A word's product is dp4a(w & mask, x): the mask drops
// the scale half of words 0 and 8 of a pair, so the products of words 0..8 sum to block 0's
// isum and those of words 9..16 to block 1's, exactly (int32, no overflow). Then lane t folds
// pairs t, t+32, ... of the round in order, as the canonical fold's lane t.
ir::Kernel warp_words_kernel(const MatvecSchedule& s) {
    const int warps = s.block / kMatvecQ8Lanes;
    const int words = round_words(s);  // words per row per round
    KernelBuilder k(fmt::format("matvec_q8_w{}_v{}_r{}", s.block, s.unroll, s.rows_per_group),
                    s.block);
    const WarpRow r = warp_row(k, warps, s);
    // Per word of the round: its dp4a product with x's word, and the raw word of W (for the
    // scale halves of words 0 and 8).
    auto products = k.shared(DType::i32, int64_t{warps} * words, "products");
    auto raw = k.shared(DType::u32, int64_t{warps} * words, "raw");
    Var row_base = k.let(r.slot * words, "row_base");
    Var first_row = k.let(r.group * s.rows_per_group, "first_row");
    Var w_last = k.let(max(r.w.len() - 1, 0), "w_last");
    // The warp's rows are consecutive, so its part of W is one run of words: `pos` is where the
    // next round to load begins. Past the last row, loads are clamped and nothing is stored.
    Var pos = k.let(min(first_row.expr(), max(r.y.len() - 1, 0)) * r.x.len(), "pos");
    const int steps = words / kMatvecQ8Lanes;  // words per lane per round
    // Lane t takes words t, t+32, ... of each round. W's words are loaded a round ahead, across
    // rows too: the loads of the next round are issued as this one is staged, so they are in
    // flight while it is summed. Words past a row's end belong to the next row (or are clamped
    // copies); their products are never read. Nothing here depends on the word's place in its
    // pair, so no per-word value outlives the round (words 0 and 8 are corrected per pair).
    auto word = [&](int c) { return r.lane + c * kMatvecQ8Lanes; };
    std::vector<Var> w_next;
    for (int c = 0; c < steps; ++c)
        w_next.push_back(k.let(r.w[min(pos + word(c), w_last.expr())], "w_next"));
    auto stage = [&](const Expr& offset) {
        for (int c = 0; c < steps; ++c) {
            const Var& wv = w_next[static_cast<size_t>(c)];
            Var xv = k.let(r.x[min(offset + word(c), r.last)], "xv");  // x is small: a cache hit
            products[row_base + word(c)] = word_dot(wv, xv, 0);
            raw[row_base + word(c)] = wv;
        }
        pos = pos + min(Expr(words), r.x.len() - offset);  // a row's last round ends the row
        // Inside W (all but the very end) no clamping, and 64-bit indices: one base, constant
        // offsets.
        k.if_(
            pos + words <= r.w.len(),
            [&] {
                Var src = k.let(cast(DType::i64, pos + r.lane), "src");
                for (int c = 0; c < steps; ++c)
                    w_next[static_cast<size_t>(c)] = r.w[src + c * kMatvecQ8Lanes];
            },
            [&] {
                for (int c = 0; c < steps; ++c)
                    w_next[static_cast<size_t>(c)] = r.w[min(pos + word(c), w_last.expr())];
            });
    };
    // Pair `local` of the round starting at word `offset`: words 1..7 and 9..16 are whole quant
    // words; words 0 and 8 hold a scale in one half, so their products are taken again from
    // the raw words with the scale half masked off. The integer sums are exact in any order.
    auto pair = [&](const Expr& offset, const Expr& local) -> Expr {
        Var first = k.let(row_base + local * kQ8PairWords, "first");
        Var x_at = k.let(offset + local * kQ8PairWords, "x_at");
        Var w0 = k.let(raw[first], "w0"), w8 = k.let(raw[first + 8], "w8");
        Var x0 = k.let(r.x[x_at], "x0"), x8 = k.let(r.x[x_at + 8], "x8");
        Expr isum0 = word_dot(word0_quants(w0), x0, 0);
        for (int i = 1; i < 8; ++i) isum0 = isum0 + products[first + i];
        isum0 = word_dot(word8_quants(w8), x8, isum0);
        Expr isum1 = Expr(0);
        for (int i = 9; i < kQ8PairWords; ++i) isum1 = isum1 + products[first + i];
        return pair_from_sums(k, w0, w8, x0, x8, isum0, isum1);
    };
    // The row loop's bounds are the same for every thread, so the fold's shuffles stay uniform.
    k.for_(0, s.rows_per_group, [&](Expr rr) {
        Var row = k.let(first_row + rr, "row");
        Var partial = k.let(DType::f32, 0.0f, "partial");
        for_each_round(
            k, s, r, partial, stage, [&] { k.warp_barrier(); }, pair);
        store_lane_partials(k, partial, r, row, row < r.y.len());
    });
    return k.finish();
}

// The streamed form (see MatvecForm::streamed). The grid is fixed by the device, not the shape:
// warp g of the grid's G warps takes rows g, g + G, ..., each in rounds of 32*unroll pairs. Every
// warp makes the same number of passes (rows past the end load nothing and store nothing), so
// the loops, the warp barriers and the fold stay uniform. Registers hold the next round's words:
// they are loaded (16-byte loads, all of a round's issued at once) right after this round's are
// stashed in the warp's tile, so a round's loads are in flight while the previous one is summed.
// Lane t adds pairs t, t+32, ... of each round in order, exactly the canonical fold's lane t.
ir::Kernel streamed_kernel(const MatvecSchedule& s) {
    const int warps = s.block / kMatvecQ8Lanes;
    const int round = kMatvecQ8Lanes * s.unroll;  // pairs per round
    const int words = round_words(s);             // words per round (a multiple of 4)
    const int groups = words / 4;                 // 16-byte groups per round
    const int steps = static_cast<int>(ceil_div(groups, kMatvecQ8Lanes));  // groups per lane
    KernelBuilder k(
        fmt::format("matvec_q8_p{}_v{}_c{}_k{}", s.block, s.unroll, s.blocks_per_unit, s.max_k),
        s.block);
    const WarpRow r = warp_row(k, warps, s);
    k.require(r.x.len() <= x_tile_words(s),
              fmt::format("x has at most {} words: k <= {}, the streamed schedule's max_k",
                          x_tile_words(s), s.max_k));
    auto x_tile = k.shared(DType::u32, x_tile_words(s), "x_tile");
    auto w_tile = k.shared(DType::u32, int64_t{warps} * words, "w_tile");
    // All of x, once: 16-byte groups by consecutive threads, the last few words one by one.
    k.for_(
        k.thread_index() * 4, r.x.len(),
        [&](Expr i) {
            k.if_(
                i + 4 <= r.x.len(),
                [&] {
                    const std::vector<Var> v = k.load_vector(r.x, i, 4, "xw");
                    for (int j = 0; j < 4; ++j) x_tile[i + j] = v[static_cast<size_t>(j)];
                },
                [&] {
                    for (int j = 0; j < 3; ++j)
                        k.if_(i + j < r.x.len(), [&] { x_tile[i + j] = r.x[i + j]; });
                });
        },
        s.block * 4);
    k.barrier();
    Var tile_row = k.let(r.slot * words, "tile_row");
    Var stride = k.let(k.grid_size() * warps, "stride");  // rows between a warp's rows
    Var passes = k.let((r.y.len() + stride - 1) / stride, "passes");
    Var rounds = k.let((r.pairs + round - 1) / round, "rounds");
    // Group c of lane t is the round's words 4*(t + 32c) .. +3; the last c only some lanes have.
    auto lane_has = [&](int c) { return (c + 1) * kMatvecQ8Lanes <= groups; };
    Var lane_word = k.let(r.lane * 4, "lane_word");
    std::vector<Var> next;
    for (int i = 0; i < steps * 4; ++i) next.push_back(k.let(DType::u32, 0u, "next"));
    // Round `rd` of row `row` into `next`; nothing past the last row. A round inside the row
    // takes whole groups; a ragged last round takes its words one by one.
    auto fetch = [&](const Expr& row, const Expr& rd) {
        k.if_(row < r.y.len(), [&] {
            Var first = k.let(rd * words, "first");
            Var src = k.let(cast(DType::i64, row * r.x.len() + first) + cast(DType::i64, lane_word),
                            "src");
            auto whole = [&] {
                for (int c = 0; c < steps; ++c) {
                    const int offset = c * kMatvecQ8Lanes * 4;
                    auto load = [&, c, offset] {
                        const std::vector<Var> v = k.load_vector(r.w, src + offset, 4, "w");
                        for (int j = 0; j < 4; ++j) next[static_cast<size_t>(c * 4 + j)] = v[j];
                    };
                    if (lane_has(c))
                        load();
                    else
                        k.if_(r.lane < groups - c * kMatvecQ8Lanes, load);
                }
            };
            auto ragged = [&] {
                for (int c = 0; c < steps; ++c)
                    for (int j = 0; j < 4; ++j) {
                        const int at = c * kMatvecQ8Lanes * 4 + j;
                        k.if_(first + lane_word + at < r.x.len(),
                              [&] { next[static_cast<size_t>(c * 4 + j)] = r.w[src + at]; });
                    }
            };
            k.if_(first + words <= r.x.len(), whole, ragged);
        });
    };
    auto stash = [&] {
        for (int c = 0; c < steps; ++c) {
            auto store = [&, c] {
                for (int j = 0; j < 4; ++j)
                    w_tile[tile_row + lane_word + (c * kMatvecQ8Lanes * 4 + j)] =
                        next[static_cast<size_t>(c * 4 + j)];
            };
            if (lane_has(c))
                store();
            else
                k.if_(r.lane < groups - c * kMatvecQ8Lanes, store);
        }
    };
    Var row = k.let(r.group, "row");
    fetch(row, constant(DType::i32, 0));
    Var partial = k.let(DType::f32, 0.0f, "partial");
    k.for_(0, passes, [&](Expr) {
        k.for_(0, rounds, [&](Expr rd) {
            k.warp_barrier();  // the tile's last round is summed before it is overwritten
            stash();
            k.warp_barrier();
            Var last = k.let(rd + 1 == rounds, "last");
            fetch(select(last, row + stride, row), select(last, Expr(0), rd + 1));
            Var base = k.let(rd * round, "base");
            for (int u = 0; u < s.unroll; ++u) {
                Var local = k.let(r.lane + u * kMatvecQ8Lanes, "local");
                k.if_(base + local < r.pairs, [&] {
                    Var at = k.let(local * kQ8PairWords, "at");
                    partial = partial + pair_value(k, w_tile, tile_row + at, x_tile,
                                                   (base + local) * kQ8PairWords);
                });
            }
            k.if_(last, [&] {
                store_lane_partials(k, partial, r, row, row < r.y.len());
                partial = Expr(0.0f);
                row = row + stride;
            });
        });
    });
    return k.finish();
}

// The cpu_rows form (see MatvecForm::cpu_rows): thread t of block b takes rows (b*block + t)*R
// to that + R - 1 (R = rows_per_group; a row past y's end is read as the last row and not
// stored). W and x are int8 (the Q8_0 bytes), a pair 68 bytes: block i's f16 scale at bytes 34i,
// 34i + 1 (low byte first) and its 32 quants from 34i + 2 on. Each block's isum is a loop over
// its 32 bytes (exact in int32, as the dp4a sum of the other forms); in each row lane p % 32 adds
// pair p's value, in order, from +0, then the fold's halving tree: the canonical fold of 32
// lanes, chunk 1.
ir::Kernel cpu_rows_kernel(const MatvecSchedule& s) {
    constexpr int kPairBytes = 2 * kQ8BlockBytes;
    const int rows = s.rows_per_group;
    KernelBuilder k(
        fmt::format("matvec_q8_c{}{}", s.block, rows > 1 ? fmt::format("_r{}", rows) : ""),
        s.block);
    auto [w, x, y] = q8_params(k, s, DType::i8);
    Var pairs = k.let(x.len() / kPairBytes, "pairs");
    Var first = k.let(k.absolute_pos() * rows, "row");
    k.if_(first < y.len(), [&] {
        std::vector<Var> w_row;
        for (int r = 0; r < rows; ++r)
            w_row.push_back(
                k.let(cast(DType::i64, min(first + r, y.len() - 1)) * cast(DType::i64, x.len()),
                      "w_row"));
        auto lanes = k.local_array(DType::f32, int64_t{rows} * kMatvecQ8Lanes, "lanes");
        k.unroll(0, rows * kMatvecQ8Lanes, [&](Expr j) { lanes[j] = Expr(0.0f); });
        // The f16 scale at byte `at` of m, as f32 (exact).
        auto scale = [&](const Memory& m, const Expr& at) {
            auto byte = [&](const Expr& i) { return cast(DType::u32, bitcast(DType::u8, m[i])); };
            return half_scale(byte(at) | (byte(at + 1) << 8u));
        };
        // Block b's value at byte i of a pair: its offset from the pair's start.
        auto value_at = [](int b, const Expr& i) {
            return cast(DType::i64, i) + (int64_t{b} * kQ8BlockBytes + 2);
        };
        k.for_(0, pairs, [&](Expr p) {
            Var x_at = k.let(cast(DType::i64, p * kPairBytes), "x_at");
            std::array<Var, 2> dx{k.let(scale(x, x_at), "dx"),
                                  k.let(scale(x, x_at + kQ8BlockBytes), "dx")};
            // Each block's sum of x, once for all rows: w.x = (w + 128).x - 128 * sum(x), with
            // w + 128 an unsigned byte (w ^ 0x80), is the same integer, and an unsigned-by-signed
            // byte product summed in int32 is what the CPU's byte dot product instructions take
            // (vpdpbusd): one for a block's 32 bytes, where signed by signed takes 28.
            std::vector<Var> x_sum;
            for (int b = 0; b < 2; ++b) {
                Var sum = k.let(DType::i32, 0, "x_sum");
                k.for_(0, kQ8BlockValues,
                       [&](Expr i) { sum = sum + cast(DType::i32, x[x_at + value_at(b, i)]); });
                x_sum.push_back(sum);
            }
            Var lane = k.let(p & (kMatvecQ8Lanes - 1), "lane");
            for (int r = 0; r < rows; ++r) {
                Var w_at = k.let(w_row[static_cast<size_t>(r)] + x_at, "w_at");
                std::array<Expr, 2> value{Expr(0.0f), Expr(0.0f)};
                for (int b = 0; b < 2; ++b) {
                    // Summed as u32 (the bits of i32's wrapping sum, which never wraps here):
                    // the form the C++ compiler's byte dot product pattern takes.
                    Var sum = k.let(DType::u32, 0, "biased_sum");
                    k.for_(0, kQ8BlockValues, [&](Expr i) {
                        Expr at = value_at(b, i);
                        Expr w_biased =
                            bitcast(DType::u8, w[w_at + at] ^ cast(DType::i8, Expr(-128)));
                        sum = sum + cast(DType::u32, cast(DType::i32, w_biased) *
                                                         cast(DType::i32, x[x_at + at]));
                    });
                    Var isum =
                        k.let(bitcast(DType::i32, sum.expr()) - x_sum[size_t(b)] * 128, "isum");
                    Expr d =
                        scale(w, w_at + int64_t{b} * kQ8BlockBytes) * dx[static_cast<size_t>(b)];
                    value[static_cast<size_t>(b)] = k.let(d * cast(DType::f32, isum.expr()), "p");
                }
                Var at = k.let(lane + r * kMatvecQ8Lanes, "at");
                lanes[at] = lanes[at] + (value[0] + value[1]);
            }
        });
        for (int r = 0; r < rows; ++r) {
            const int base = r * kMatvecQ8Lanes;
            for (int half = kMatvecQ8Lanes / 2; half >= 1; half /= 2)
                k.unroll(0, half, [&](Expr j) {
                    lanes[j + base] = lanes[j + base] + lanes[j + (base + half)];
                });
            k.if_(first + r < y.len(), [&] { y[first + r] = lanes[base]; });
        }
    });
    return k.finish();
}

// The memo key of a schedule's kernel: every field the kernel is built from.
std::string schedule_key(const MatvecSchedule& s) {
    return fmt::format("matvec_q8/b{}t{}v{}f{}r{}c{}k{}s{}m{}", s.block, s.threads, s.unroll,
                       form_name(s.form), s.rows_per_group, s.blocks_per_unit, s.max_k, s.streaming,
                       s.min_blocks);
}

std::function<ir::Kernel()> builder(const MatvecSchedule& s) {
    return [s] { return matvec_q8_kernel(s); };
}

}  // namespace

std::span<const MatvecVariant> matvec_q8_variants() {
    return kVariants;
}

ir::Kernel matvec_q8_kernel(const MatvecSchedule& s) {
    check_schedule(s);
    if (s.form == staged) return staged_kernel(s);
    if (s.form == warp_words) return warp_words_kernel(s);
    if (s.form == streamed) return streamed_kernel(s);
    if (s.form == cpu_rows) return cpu_rows_kernel(s);
    KernelBuilder k(fmt::format("matvec_q8_b{}_t{}_v{}", s.block, s.threads, s.unroll), s.block);
    auto [w, x, y] = q8_params(k, s, DType::u32);
    Var pairs = k.let(x.len() / kQ8PairWords, "pairs");
    Var group = k.let(k.absolute_pos() / s.threads, "group");
    // Clamp instead of branching: every thread of the block must reach the fold's barriers.
    Var row = k.let(min(group.expr(), max(y.len() - 1, 0)), "row");
    Var w_row = k.let(row * x.len(), "w_row");
    Fold fold = Fold::sum().lanes(kMatvecQ8Lanes).chunk(kMatvecQ8Chunk).threads(s.threads);
    fold.spec.unroll = s.unroll;
    Var acc = k.fold(DType::f32, pairs, fold, [&](Expr j) -> Expr {
        // 64-bit word indices: the 17 loads of a pair then address one base with constant
        // offsets (a 32-bit index wraps, so its sum with a constant cannot be folded).
        Var x_base = k.let(cast(DType::i64, j * kQ8PairWords), "x_base");
        return pair_value(k, w, cast(DType::i64, w_row.expr()) + x_base, x, x_base);
    });
    k.if_(group < y.len() && (k.thread_index() % s.threads) == 0, [&] { y[row] = acc; });
    return k.finish();
}

DType matvec_q8_word_type(const MatvecSchedule& s) {
    return s.form == cpu_rows ? DType::i8 : DType::u32;
}

int64_t matvec_q8_grid(int64_t rows, const MatvecSchedule& s, int compute_units) {
    const int64_t rows_per_block = s.block / s.threads * s.rows_per_group;
    const int64_t blocks = ceil_div(rows, rows_per_block);
    if (s.form != streamed) return blocks;
    return std::min(blocks, int64_t{std::max(compute_units, 1)} * s.blocks_per_unit);
}

bool matvec_q8_serves(const MatvecSchedule& s, int64_t k) {
    return s.form != streamed || k <= s.max_k;
}

int64_t matvec_q8_check_shape(int64_t rows, int64_t k) {
    if (rows < 1) fail("matvec_q8: rows = {}; expected at least 1", rows);
    if (k < 64 || k % 64 != 0)
        fail("matvec_q8: k = {}; expected a positive multiple of 64 (whole Q8_0 block pairs)", k);
    const auto row_bytes = checked_mul(k / kQ8BlockValues, kQ8BlockBytes);
    const auto bytes = row_bytes ? checked_mul(rows, *row_bytes) : std::nullopt;
    if (!bytes)
        fail("matvec_q8: rows = {} x k = {} overflows int64 in bytes of Q8_0 (at most {})", rows, k,
             std::numeric_limits<int64_t>::max());
    if (*bytes > std::numeric_limits<int32_t>::max())
        fail("matvec_q8: rows = {} x k = {} is {} bytes of Q8_0; the kernel indexes at most {}",
             rows, k, *bytes, std::numeric_limits<int32_t>::max());
    return *bytes;
}

void check_matvec_q8_args(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows,
                          int64_t k) {
    const int64_t w_bytes = matvec_q8_check_shape(rows, k);
    for (const Buffer* b : {&w_q8, &x_q8})
        if (b->dtype() != DType::u8)
            fail("matvec_q8: {} buffer has dtype {}; expected u8 (raw Q8_0 blocks)",
                 b == &w_q8 ? "w" : "x", name(b->dtype()));
    const int64_t row_bytes = w_bytes / rows;
    if (static_cast<int64_t>(w_q8.bytes()) != w_bytes)
        fail("matvec_q8: w has {} bytes; expected rows*k/32*34 = {}*{}/32*34 = {}", w_q8.bytes(),
             rows, k, w_bytes);
    if (static_cast<int64_t>(x_q8.bytes()) != row_bytes)
        fail("matvec_q8: x has {} bytes; expected k/32*34 = {}/32*34 = {}", x_q8.bytes(), k,
             row_bytes);
    if (&w_q8.device() != &device || &x_q8.device() != &device)
        fail("matvec_q8: w and x must live on device {}", device.info().id);
}

Timed<Buffer> matvec_q8_bench(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows,
                              int64_t k, const MatvecSchedule& schedule, int iters) {
    check_matvec_q8_args(device, w_q8, x_q8, rows, k);
    check_schedule(schedule);
    auto kernel = memo_compiled(device, schedule_key(schedule), builder(schedule));
    Buffer y(device, DType::f32, static_cast<size_t>(rows));
    const DType word = matvec_q8_word_type(schedule);
    const Buffer w = w_q8.view(word), x = x_q8.view(word);
    const int64_t grid = matvec_q8_grid(rows, schedule, device.info().compute_units);
    const double ms = time_dispatches(device, iters, [&] { kernel->launch(grid, {w, x, y}); });
    return {std::move(y), ms};
}

Tuned<Buffer> matvec_q8_tuned(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows,
                              int64_t k) {
    check_matvec_q8_args(device, w_q8, x_q8, rows, k);
    // The variants whose schedule serves k, as a bit set over kVariants: the table is built once
    // per set, and a hit allocates nothing for it.
    static_assert(std::size(kVariants) <= 64);
    uint64_t served = 0;
    for (size_t i = 0; i < std::size(kVariants); ++i)
        if (matvec_q8_serves(kVariants[i].schedule, k)) served |= uint64_t{1} << i;
    const VariantTable& table = memo_variant_table(
        fmt::format("matvec_q8/{:x}", served), device.info().backend, "matvec_q8", [&] {
            std::vector<NamedKernel> kernels;
            for (uint64_t rest = served; rest != 0; rest &= rest - 1) {
                const MatvecVariant& v = kVariants[std::countr_zero(rest)];
                kernels.push_back({v.name, schedule_key(v.schedule), builder(v.schedule)});
            }
            return kernels;
        });
    Tuned<Buffer> tuned("matvec_q8", fmt::format("rows={},k={}", rows, k), device);
    tuned.variants(table,
                   [&device, &w_q8, &x_q8, rows, k, served](size_t i) -> Tuned<Buffer>::Closure {
                       uint64_t rest = served;  // the table's variant i: the i-th set bit
                       for (; i > 0; --i) rest &= rest - 1;
                       const MatvecSchedule& s = kVariants[std::countr_zero(rest)].schedule;
                       return [&device, &w_q8, &x_q8, rows, k, &s](int iters) {
                           return matvec_q8_bench(device, w_q8, x_q8, rows, k, s, iters);
                       };
                   });
    return tuned;
}

Buffer matvec_q8(Device& device, const Buffer& w_q8, const Buffer& x_q8, int64_t rows, int64_t k,
                 Tuner& tuner) {
    return matvec_q8_tuned(device, w_q8, x_q8, rows, k).run(tuner);
}

}  // namespace kiln::ops
