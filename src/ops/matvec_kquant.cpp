// matvec_kquant: the Q4_K and Q6_K kernels in the DSL (one fold over a row's units, each unit's
// value from exact dp4a sums), the variant table, the bench and the tuned entry point.
#include "kiln/ops/matvec_kquant.hpp"

#include <fmt/format.h>

#include <array>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "base/ceil_div.hpp"
#include "base/checked_mul.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "ops/kernel_memo.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops {

namespace {

constexpr std::array<MatvecKquantVariant, 4> kVariants{{
    {"b64_t32_v1", {.block = 64, .threads = 32, .unroll = 1}},
    {"b256_t32_v2", {.block = 256, .threads = 32, .unroll = 2}},
    {"b128_t8_v1", {.block = 128, .threads = 8, .unroll = 1}},
    {"b64_t1_v1", {.block = 64, .threads = 1, .unroll = 1}},
}};

constexpr int kXSuperBytes = 8 * kQ8BlockBytes;  // x's bytes per super-block: 8 Q8_0 blocks

int supers_per_unit(KQuant f) {
    return f == KQuant::q4_k ? 1 : 2;
}
int w_super_bytes(KQuant f) {
    return f == KQuant::q4_k ? kQ4KBlockBytes : kQ6KBlockBytes;
}
int w_unit_words(KQuant f) {
    return supers_per_unit(f) * w_super_bytes(f) / 4;
}
int x_unit_words(KQuant f) {
    return supers_per_unit(f) * kXSuperBytes / 4;
}

// The u32 words of a buffer from word `base` on, each loaded once (named by k.let) when first
// used, and the 4-byte values at even byte offsets from the start of the data. That start is
// `base`'s first byte, or with `shift` (a u32, 0 or 16 at run time) `shift / 8` bytes into it:
// two words are joined where a value is 2 bytes off alignment.
class UnitWords {
  public:
    UnitWords(KernelBuilder& k, const Memory& m, Expr base, const char* name,
              std::optional<Expr> shift = std::nullopt)
        : k_(k), m_(m), base_(std::move(base)), name_(name), shift_(std::move(shift)) {}

    Expr word(int i) {
        auto it = words_.find(i);
        if (it == words_.end())
            it = words_.emplace(i, k_.let(m_[base_ + i], fmt::format("{}{}", name_, i))).first;
        return it->second;
    }
    // The 4 bytes from byte `at` (even; a multiple of 4 with a shift) on, little-endian.
    Expr at_byte(int at) {
        if (shift_) {  // (hi << 1) << (31 - shift): hi << (32 - shift), and 0 for shift 0
            return (word(at / 4) >> *shift_) | ((word(at / 4 + 1) << 1u) << (31u - *shift_));
        }
        if (at % 4 == 0) return word(at / 4);
        return (word(at / 4) >> 16u) | (word(at / 4 + 1) << 16u);
    }
    // The 16 bits at byte `at` (even), in the low half of a u32.
    Expr half(int at) { return bits_at(at, 16) & 0xffffu; }
    // Byte `at` as a u32 in 0..255.
    Expr byte(int at) { return bits_at(at, 8) & 0xffu; }

  private:
    // The word whose low `bits` bits are those from byte `at` on (higher bits unspecified). With a
    // shift, a word of its own where they lie in one word whatever the shift (no read past them).
    Expr bits_at(int at, int bits) {
        const auto offset = static_cast<uint32_t>(8 * (at % 4));
        if (!shift_) return word(at / 4) >> offset;
        if (offset + 16 + bits <= 32) return word(at / 4) >> (*shift_ + offset);
        return at_byte(at - at % 4) >> offset;
    }

    KernelBuilder& k_;
    const Memory& m_;
    Expr base_;
    const char* name_;
    std::optional<Expr> shift_;
    std::map<int, Expr> words_;
};

Expr as_i32(const Expr& u) {
    return bitcast(DType::i32, u);
}

// acc + the dot product of two words' four int8 lanes.
Expr dot4(const Expr& a, const Expr& b, const Expr& acc) {
    return dp4a(as_i32(a), as_i32(b), acc);
}

// A pair of x's Q8_0 blocks (17 words, at an aligned word): their f32 scales and their quants,
// 8 words each (block 0's start 2 bytes into word 0, block 1's at word 9).
struct XPair {
    std::array<Expr, 2> d{0, 0};
    std::array<std::vector<Expr>, 2> q;
    // The sum of block b's quants.
    Expr bsum(int b) const {
        Expr s = Expr(0);
        for (const Expr& word : q[size_t(b)]) s = dot4(word, Expr(0x01010101u), s);
        return s;
    }
};

XPair x_pair(KernelBuilder& k, UnitWords& x) {
    XPair p;
    p.d[0] = k.let(half_scale(x.half(0)), "dx");
    p.d[1] = k.let(half_scale(x.half(34)), "dx");
    for (int b = 0; b < 2; ++b)
        for (int m = 0; m < 8; ++m) p.q[size_t(b)].push_back(x.at_byte(34 * b + 2 + 4 * m));
    return p;
}

// Q4_K sub-block j's 6-bit scale and min (the packing of oracle::unpack_q4_k) from the 12 scale
// bytes at byte 4 of the super-block.
std::pair<Expr, Expr> q4_k_scale_min(UnitWords& w, int j) {
    auto s = [&](int i) { return w.byte(4 + i); };
    if (j < 4) return {as_i32(s(j) & 63u), as_i32(s(j + 4) & 63u)};
    return {as_i32((s(j + 4) & 0xFu) | ((s(j - 4) >> 6u) << 4u)),
            as_i32((s(j + 4) >> 4u) | ((s(j) >> 6u) << 4u))};
}

// Adds a Q4_K super-block's pairs q_r (r = 0..3, x blocks 2r and 2r + 1) to `acc` in order.
void q4_k_super(KernelBuilder& k, const Memory& w, const Expr& w_base, const Memory& x,
                const Expr& x_base, Var& acc) {
    UnitWords head(k, w, w_base, "h");
    Var d = k.let(half_scale(head.half(0)), "d");
    Var dmin = k.let(half_scale(head.half(2)), "dmin");
    Memory scale = k.local_array(DType::i32, 8, "scale"), min = k.local_array(DType::i32, 8, "min");
    for (int j = 0; j < 8; ++j) {
        const auto [sj, mj] = q4_k_scale_min(head, j);
        scale[j] = sj;
        min[j] = mj;
    }
    k.for_(0, 4, [&](Expr r) {
        // Run r's 32 bytes of W: low nibbles sub-block 2r, high nibbles 2r + 1.
        UnitWords ww(k, w, w_base + cast(DType::i64, r * 8), "w");
        UnitWords xw(k, x, x_base + cast(DType::i64, r * 17), "x");
        const XPair xp = x_pair(k, xw);
        std::array<Expr, 2> p{0, 0};
        for (int e = 0; e < 2; ++e) {
            Expr isum = Expr(0);
            for (int m = 0; m < 8; ++m) {
                Expr qw = ww.word(4 + m);
                Expr nibbles = e == 0 ? (qw & 0x0F0F0F0Fu) : ((qw >> 4u) & 0x0F0F0F0Fu);
                isum = dot4(nibbles, xp.q[size_t(e)][size_t(m)], isum);
            }
            Var a = k.let(scale[r * 2 + e] * isum, "a");
            Var b = k.let(min[r * 2 + e] * xp.bsum(e), "b");
            Var pa = k.let((d * xp.d[size_t(e)]) * cast(DType::f32, a), "pa");
            Var pb = k.let((dmin * xp.d[size_t(e)]) * cast(DType::f32, b), "pb");
            p[size_t(e)] = k.let(pa - pb, "p");
        }
        acc = acc + (p[0] + p[1]);
    });
}

// The four bytes of `v` (each 0..63, a Q6_K quant as stored) less 32 each, as int8 lanes: the
// subtraction runs on bytes with their top bit set, so none borrows from the next.
Expr less_32(const Expr& v) {
    return ((v | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
}

// Q6_K's int8 scale in byte `at` of the words, sign-extended.
Expr q6_k_scale(UnitWords& w, int at) {
    Expr b = as_i32(w.byte(at));
    return b - ((b & 128) << 1);
}

// Adds the Q6_K unit's pairs q_i (i = 0..7, x blocks 2i and 2i + 1) to `acc` in order. Pair i
// is in super-block s = i / 4, which starts s * 210 bytes in: word 52s, 16s bits into it. Its
// ii = i % 4 is half h = ii / 2 of the super-block, quarters c = 2(ii % 2) and c + 1
// (oracle::unpack_q6_k's layout): low bits at bytes 64h + 32(c % 2) in nibble c / 2, high bits
// at 128 + 32h in bit pair c.
void q6_k_unit(KernelBuilder& k, const Memory& w, const Expr& w_base, const Memory& x,
               const Expr& x_base, Var& acc) {
    k.for_(0, 8, [&](Expr i) {
        Var s = k.let(i >> 2, "s"), ii = k.let(i & 3, "ii");
        Var h = k.let(ii >> 1, "h");
        Var super = k.let(w_base + cast(DType::i64, s * (kQ6KBlockBytes / 4)), "super");
        Var skew = k.let(bitcast(DType::u32, s * 16), "skew");  // bits into the first word
        Var shift = k.let(bitcast(DType::u32, (ii & 1) * 4), "shift");
        UnitWords head(k, w, super, "d", skew.expr());
        UnitWords low(k, w, super + cast(DType::i64, h * 16), "l", skew.expr());
        UnitWords high(k, w, super + cast(DType::i64, h * 8), "q", skew.expr());
        UnitWords scales(k, w, super + cast(DType::i64, ii), "s", skew.expr());
        UnitWords xw(k, x, x_base + cast(DType::i64, s * (kXSuperBytes / 4) + ii * 17), "x");
        Var d = k.let(half_scale(head.half(208)), "d");
        const XPair xp = x_pair(k, xw);
        std::array<Expr, 2> p{0, 0};
        for (int e = 0; e < 2; ++e) {
            std::array<Expr, 2> sums{0, 0};
            for (int m = 0; m < 8; ++m) {
                Expr nibbles = (low.at_byte(32 * e + 4 * m) >> shift) & 0x0F0F0F0Fu;
                Expr bits = ((high.at_byte(128 + 4 * m) >> (shift + uint32_t(2 * e))) & 0x03030303u)
                            << 4u;
                sums[size_t(m / 4)] =
                    dot4(less_32(nibbles | bits), xp.q[size_t(e)][size_t(m)], sums[size_t(m / 4)]);
            }
            Var lo = k.let(sums[0], "lo"), hi = k.let(sums[1], "hi");  // sub-blocks 4ii+2e, +1
            const int c = 192 + 2 * e;  // scales 4ii + 2e and 4ii + 2e + 1
            Var a = k.let(q6_k_scale(scales, c) * lo + q6_k_scale(scales, c + 1) * hi, "a");
            p[size_t(e)] = k.let((d * xp.d[size_t(e)]) * cast(DType::f32, a), "p");
        }
        acc = acc + (p[0] + p[1]);
    });
}

// The value v of the unit of W at word w_base against x's unit at x_base.
Expr unit_value(KernelBuilder& k, KQuant f, const Memory& w, const Expr& w_base, const Memory& x,
                const Expr& x_base) {
    Var acc = k.let(DType::f32, 0.0f, "v");
    if (f == KQuant::q4_k) {
        q4_k_super(k, w, w_base, x, x_base, acc);
    } else {
        q6_k_unit(k, w, w_base, x, x_base, acc);
    }
    return acc;
}

void check_schedule(const MatvecKquantSchedule& s) {
    check_row_threads("matvec_kquant", s.threads, kMatvecKquantLanes, s.block);
    if (s.unroll < 1 || s.unroll > 8)
        fail("matvec_kquant: schedule unroll {}; expected 1 to 8", s.unroll);
}

std::string schedule_key(KQuant f, const MatvecKquantSchedule& s) {
    return fmt::format("matvec_{}/b{}t{}v{}", kquant_name(f), s.block, s.threads, s.unroll);
}

std::function<ir::Kernel()> builder(KQuant f, const MatvecKquantSchedule& s) {
    return [f, s] { return matvec_kquant_kernel(f, s); };
}

}  // namespace

const char* kquant_name(KQuant format) {
    return format == KQuant::q4_k ? "q4_k" : "q6_k";
}

int64_t kquant_unit_values(KQuant format) {
    return int64_t{kKquantBlockValues} * supers_per_unit(format);
}

int64_t kquant_bytes(KQuant format, int64_t rows, int64_t k) {
    return rows * (k / kKquantBlockValues) * w_super_bytes(format);
}

std::span<const MatvecKquantVariant> matvec_kquant_variants() {
    return kVariants;
}

ir::Kernel matvec_kquant_kernel(KQuant f, const MatvecKquantSchedule& s) {
    check_schedule(s);
    KernelBuilder k(
        fmt::format("matvec_{}_b{}_t{}_v{}", kquant_name(f), s.block, s.threads, s.unroll),
        s.block);
    auto w = k.input("w", DType::u32);
    auto x = k.input("x", DType::u32);
    auto y = k.output("y", DType::f32);
    const int w_words = w_unit_words(f), x_words = x_unit_words(f);
    k.require(x.len() % x_words == 0 && w.len() == y.len() * (x.len() / x_words * w_words),
              fmt::format("x holds units of {} words and w, per y element, a row of as many "
                          "units of {} words",
                          x_words, w_words));
    Var units = k.let(x.len() / x_words, "units");
    Var group = k.let(k.absolute_pos() / s.threads, "group");
    Var row = k.let(min(group.expr(), max(y.len() - 1, 0)), "row");
    Var w_row = k.let(cast(DType::i64, row * (units * w_words)), "w_row");
    Fold fold = Fold::sum().lanes(kMatvecKquantLanes).chunk(1).threads(s.threads);
    fold.spec.unroll = s.unroll;
    Var acc = k.fold(DType::f32, units, fold, [&](Expr j) -> Expr {
        Var w_base = k.let(w_row + cast(DType::i64, j * w_words), "w_base");
        Var x_base = k.let(cast(DType::i64, j * x_words), "x_base");
        return unit_value(k, f, w, w_base, x, x_base);
    });
    k.if_(group < y.len() && (k.thread_index() % s.threads) == 0, [&] { y[row] = acc; });
    return k.finish();
}

int64_t matvec_kquant_grid(int64_t rows, const MatvecKquantSchedule& s) {
    return ceil_div(rows, int64_t{s.block / s.threads});
}

void check_matvec_kquant_args(Device& device, KQuant f, const Buffer& w, const Buffer& x_q8,
                              int64_t rows, int64_t k) {
    const char* op = f == KQuant::q4_k ? "matvec_q4_k" : "matvec_q6_k";
    const int64_t unit = kquant_unit_values(f);
    if (rows < 1) fail("{}: rows = {}; expected at least 1", op, rows);
    if (k < unit || k % unit != 0)
        fail("{}: k = {}; expected a positive multiple of {} ({} super-block{} of 256)", op, k,
             unit, supers_per_unit(f), supers_per_unit(f) == 1 ? "" : "s");
    const auto bytes = checked_mul(rows, (k / kKquantBlockValues) * w_super_bytes(f));
    if (!bytes || *bytes > std::numeric_limits<int32_t>::max())
        fail("{}: rows = {} x k = {} is over {} bytes of {}, the most the kernel indexes", op, rows,
             k, std::numeric_limits<int32_t>::max(), kquant_name(f));
    for (const Buffer* b : {&w, &x_q8})
        if (b->dtype() != DType::u8)
            fail("{}: {} buffer has dtype {}; expected u8 (raw {} blocks)", op, b == &w ? "w" : "x",
                 name(b->dtype()), b == &w ? kquant_name(f) : "Q8_0");
    if (static_cast<int64_t>(w.bytes()) != *bytes)
        fail("{}: w has {} bytes; expected rows*k/256*{} = {}*{}/256*{} = {}", op, w.bytes(),
             w_super_bytes(f), rows, k, w_super_bytes(f), *bytes);
    const int64_t x_bytes = k / kQ8BlockValues * kQ8BlockBytes;
    if (static_cast<int64_t>(x_q8.bytes()) != x_bytes)
        fail("{}: x has {} bytes; expected k/32*34 = {}/32*34 = {} (Q8_0)", op, x_q8.bytes(), k,
             x_bytes);
    if (&w.device() != &device || &x_q8.device() != &device)
        fail("{}: w and x must live on device {}", op, device.info().id);
}

Timed<Buffer> matvec_kquant_bench(Device& device, KQuant f, const Buffer& w, const Buffer& x_q8,
                                  int64_t rows, int64_t k, const MatvecKquantSchedule& schedule,
                                  int iters) {
    check_matvec_kquant_args(device, f, w, x_q8, rows, k);
    check_schedule(schedule);
    auto kernel = memo_compiled(device, schedule_key(f, schedule), builder(f, schedule));
    Buffer y(device, DType::f32, static_cast<size_t>(rows));
    const Buffer wv = w.view(DType::u32), xv = x_q8.view(DType::u32);
    const int64_t grid = matvec_kquant_grid(rows, schedule);
    const double ms = time_dispatches(device, iters, [&] { kernel->launch(grid, {wv, xv, y}); });
    return {std::move(y), ms};
}

Tuned<Buffer> matvec_kquant_tuned(Device& device, KQuant f, const Buffer& w, const Buffer& x_q8,
                                  int64_t rows, int64_t k) {
    check_matvec_kquant_args(device, f, w, x_q8, rows, k);
    const std::string op = fmt::format("matvec_{}", kquant_name(f));
    const VariantTable& table = memo_variant_table(op, device.info().backend, op, [f] {
        std::vector<NamedKernel> kernels;
        for (const auto& v : kVariants)
            kernels.push_back({v.name, schedule_key(f, v.schedule), builder(f, v.schedule)});
        return kernels;
    });
    Tuned<Buffer> tuned(op, fmt::format("rows={},k={}", rows, k), device);
    tuned.variants(table, [&device, f, &w, &x_q8, rows, k](size_t i) -> Tuned<Buffer>::Closure {
        const MatvecKquantSchedule& s = kVariants[i].schedule;
        return [&device, f, &w, &x_q8, rows, k, &s](int iters) {
            return matvec_kquant_bench(device, f, w, x_q8, rows, k, s, iters);
        };
    });
    return tuned;
}

Buffer matvec_kquant(Device& device, KQuant f, const Buffer& w, const Buffer& x_q8, int64_t rows,
                     int64_t k, Tuner& tuner) {
    return matvec_kquant_tuned(device, f, w, x_q8, rows, k).run(tuner);
}

}  // namespace kiln::ops
