// The pieces contraction kernels share (see contraction.hpp).
#include "ops/contraction.hpp"

#include <bit>

#include "kiln/error.hpp"

namespace kiln::ops::contraction {

bool pow2(int v) {
    return v >= 1 && std::has_single_bit(static_cast<unsigned>(v));
}

bool fits_index(int64_t a, int64_t b, int64_t c) {
    return a <= kMaxIndex && b <= kMaxIndex && c <= kMaxIndex && a * b <= kMaxIndex &&
           a * b * c <= kMaxIndex;
}

void check_types(const char* op, DType input, DType output) {
    if (!is_input_float(input))
        fail("{}: inputs are {}; expected f32, f16 or bf16", op, name(input));
    if (output != DType::f32 && output != input)
        fail("{}: output dtype {} for {} inputs; expected f32 or {}", op, name(output), name(input),
             name(input));
}

void check_tiles(const char* op, const std::string& name, int bm, int bn, int tm, int tn) {
    // A block of one row of threads (bm == tm) may hold any count of rows from 1 to 8: a CPU's
    // register tile (6 rows x 4 vectors of accumulators fill 24 of AVX-512's 32 registers).
    const bool one_row = bm == tm;
    if ((!pow2(tm) && !one_row) || !pow2(tn) || tm < 1 || tm > 8 || tn > 8)
        fail(
            "{} schedule {}: thread tile {}x{}; expected powers of two from 1 to 8 (rows from 1 "
            "to 8 in a block of one row of threads)",
            op, name, tm, tn);
    if ((!pow2(bm) && !one_row) || !pow2(bn) || bm % tm != 0 || bn % tn != 0)
        fail(
            "{} schedule {}: block tile {}x{}; expected powers of two, multiples of the thread "
            "tile {}x{}",
            op, name, bm, bn, tm, tn);
    const int threads = (bm / tm) * (bn / tn);
    if (threads > 1024)
        fail("{} schedule {}: {} threads a block; expected at most 1024", op, name, threads);
}

void check_step(const char* op, const std::string& name, int bk) {
    if (!pow2(bk) || bk > 64)
        fail("{} schedule {}: bk {}; expected a power of two from 1 to 64", op, name, bk);
}

void check_min_blocks(const char* op, const std::string& name, int min_blocks, int threads) {
    constexpr int kMaxThreadsPerUnit = 2048;  // sm_80 to sm_90
    if (min_blocks < 0 || min_blocks > ir::kMaxMinBlocksPerUnit ||
        min_blocks * threads > kMaxThreadsPerUnit)
        fail(
            "{} schedule {}: min_blocks {} of {} threads; expected 0 to {} blocks and at most {} "
            "threads together",
            op, name, min_blocks, threads, ir::kMaxMinBlocksPerUnit, kMaxThreadsPerUnit);
}

void check_exact_knobs(const char* op, const std::string& name, bool tensor_core,
                       bool totals_in_memory, int min_blocks) {
    if (tensor_core && (totals_in_memory || min_blocks != 0))
        fail(
            "{} schedule {}: totals in memory or min_blocks on tensor cores; expected an exact "
            "point",
            op, name);
}

void ask_min_blocks(KernelBuilder& k, int min_blocks) {
    if (min_blocks > 0) k.min_blocks_per_unit(min_blocks);
}

Accumulators::Accumulators(KernelBuilder& k, int rows, int cols, Totals where)
    : tm(rows), tn(cols), k_(&k) {
    if (where == Totals::memory) total_in_memory_ = k.memory_array(DType::f32, tm * tn, "totals");
    for (int i = 0; i < tm * tn; ++i) {
        acc.push_back(k.let(DType::f32, 0.0f, "acc"));
        if (total_in_memory_)
            (*total_in_memory_)[i] = Expr(-0.0f);
        else
            total_.push_back(k.let(DType::f32, -0.0f, "total"));
    }
}

Accumulators::Accumulators(KernelBuilder& k, int rows, int cols, const Memory& totals,
                           std::function<Expr(int i)> at)
    : tm(rows), tn(cols), k_(&k), total_in_memory_(totals), total_at_(std::move(at)) {
    for (int i = 0; i < tm * tn; ++i) acc.push_back(k.let(DType::f32, 0.0f, "acc"));
}

Expr Accumulators::value(int r, int c) const {
    const int i = r * tn + c;
    if (total_in_memory_) return k_->let((*total_in_memory_)[total_at(i)], "total");
    return total_[static_cast<size_t>(i)];
}

void Accumulators::close_chunk() {
    for (size_t i = 0; i < acc.size(); ++i) {
        if (total_in_memory_) {
            auto total = (*total_in_memory_)[total_at(static_cast<int>(i))];
            total = total + acc[i];
        } else {
            total_[i] = total_[i] + acc[i];
        }
        acc[i] = Expr(0.0f);
    }
}

void Accumulators::add_term(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    for (int r = 0; r < tm; ++r)
        for (int c = 0; c < tn; ++c) {
            Var& v = at(r, c);
            v = fma(a[static_cast<size_t>(r)], b[static_cast<size_t>(c)], v);
        }
}

void Accumulators::add_term_where(const std::vector<Expr>& a, const std::vector<Expr>& b,
                                  const std::vector<Expr>& has) {
    for (int r = 0; r < tm; ++r)
        for (int c = 0; c < tn; ++c) {
            Var& v = at(r, c);
            const size_t col = static_cast<size_t>(c);
            v = select(has[col], fma(a[static_cast<size_t>(r)], b[col], v), v);
        }
}

void chunked_terms(KernelBuilder& k, Accumulators& acc, const Expr& terms,
                   const std::function<void(Expr)>& body) {
    k.for_(
        0, terms,
        [&](Expr c0) {
            k.for_(c0, min(c0 + kChunkTerms, terms), body);
            acc.close_chunk();
        },
        kChunkTerms);
}

void close_after_step(KernelBuilder& k, Accumulators& acc, const Expr& p0, int step,
                      const Expr& terms) {
    k.if_((p0 + step) % kChunkTerms == 0 && p0 + step < terms, [&] { acc.close_chunk(); });
}

std::vector<TileSlot> tile_slots(KernelBuilder& k, int count, int threads,
                                 const std::function<TileSlot(const Expr&)>& slot) {
    std::vector<TileSlot> slots;
    for (int q = 0; q * threads < count; ++q) {
        Expr e = k.thread_index() + q * threads;
        if ((q + 1) * threads <= count) {
            slots.push_back(slot(e));
        } else {
            slots.push_back(slot(min(e, Expr(count - 1))));
            slots.back().has = e < count;
        }
    }
    return slots;
}

void where_slot(KernelBuilder& k, const std::optional<Expr>& has,
                const std::function<void()>& body) {
    if (has)
        k.if_(*has, body);
    else
        body();
}

void store_slot(KernelBuilder& k, const Memory& tile, const TileSlot& slot, const Expr& v) {
    where_slot(k, slot.has, [&] { tile[slot.tile_at] = v; });
}

}  // namespace kiln::ops::contraction
