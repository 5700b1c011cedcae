// Pieces of the tensor-core class's kernels: operand pairs and the staging of shared pair tiles.
#include "ops/tensor_core_parts.hpp"

namespace kiln::ops::tensor_core {

using contraction::TileSlot;

Expr pair_at(const ElementRead& m, const Expr& q, const Expr& k, bool inside,
             const std::function<Expr(const Expr&)>& element,
             const std::function<Expr(const Expr&)>& present) {
    auto half = [&](const Expr& at) {
        const Expr clamped = inside ? at : min(at, k - 1);
        const Expr value = bitcast(DType::u32, m(element(clamped)));
        if (inside && !present) return value;
        Expr exists = inside ? present(at) : at < k;
        if (present && !inside) exists = exists && present(clamped);
        return select(exists, value, constant(DType::u32, 0));
    };
    return half(q) | (half(q + 1) << 16);
}

Expr pack_pair(DType input, const Expr& lo, const Expr& hi) {
    auto half = [&](const Expr& v) { return bitcast(DType::u32, cast(input, v)); };
    return half(lo) | (half(hi) << 16);
}

void Staging::fetch(KernelBuilder& k, const Expr& p0, const Expr& k_terms, bool inside,
                    const LineElement& element, const LineElement& present) {
    for (size_t i = 0; i < slots.size(); ++i) {
        const TileSlot& slot = slots[i];
        auto at = [&](const Expr& q) { return element(slot.line, q); };
        std::function<Expr(const Expr&)> exists;
        if (present) exists = [&](const Expr& q) { return present(slot.line, q); };
        if (width == 4 && inside) {
            const std::vector<Var> v = k.load_vector(*read.buffer, at(p0 + slot.term), 8, "h");
            for (size_t j = 0; j < 4; ++j)
                pairs[i][j] =
                    bitcast(DType::u32, v[2 * j]) | (bitcast(DType::u32, v[2 * j + 1]) << 16);
            continue;
        }
        for (int j = 0; j < width; ++j)
            pairs[i][size_t(j)] =
                pair_at(read, p0 + slot.term + 2 * j, k_terms, inside, at, exists);
    }
}

void Staging::put(KernelBuilder& k, const Memory& tile, const Expr& offset) const {
    for (size_t i = 0; i < slots.size(); ++i) {
        const Expr at = slots[i].tile_at + offset;
        auto store = [&] {
            if (width == 4)
                k.store_vector(tile, at, {pairs[i][0], pairs[i][1], pairs[i][2], pairs[i][3]});
            else
                tile[at] = pairs[i][0];
        };
        contraction::where_slot(k, slots[i].has, store);
    }
}

void Staging::copy(KernelBuilder& k, const Expr& p0, const Memory& tile, const Expr& offset,
                   const LineElement& element) const {
    for (const TileSlot& slot : slots)
        contraction::where_slot(k, slot.has, [&] {
            k.copy_to_shared(tile, slot.tile_at + offset, *read.buffer,
                             element(slot.line, p0 + slot.term));
        });
}

KMajorStaging stage_k_major(KernelBuilder& k, const ElementRead& read, int lines, int terms,
                            int threads) {
    KMajorStaging st{k_major_ld(lines), read, {}};
    const int runs = lines / 8;  // a row's slots
    st.slots = contraction::tile_slots(k, terms * runs, threads, [&](const Expr& e) {
        Var row = k.let(e / runs, "row");
        Var run = k.let(e % runs, "run");
        return TileSlot{k.let(row * st.ld + run * 4, "tile_at"), k.let(run * 8, "line"), row,
                        std::nullopt};
    });
    return st;
}

void KMajorStaging::issue(KernelBuilder& k, const Expr& q0, const Expr& k_terms, bool inside,
                          const Expr& first_line, const Expr& line_count,
                          const Staging::LineElement& element, const Memory& tile,
                          const Expr& offset) const {
    for (const TileSlot& slot : slots) {
        contraction::where_slot(k, slot.has, [&] {
            Var q = k.let(q0 + slot.term, "q");
            Var line = k.let(first_line + slot.line, "line0");
            auto by_element = [&] {
                auto value = [&](int i) {
                    const Expr at = line + i;
                    const Expr v = bitcast(
                        DType::u32, read(element(min(at, line_count - 1), min(q, k_terms - 1))));
                    return select(at < line_count && q < k_terms, v, constant(DType::u32, 0));
                };
                std::vector<Expr> words;
                for (int j = 0; j < 4; ++j)
                    words.push_back(value(2 * j) | (value(2 * j + 1) << 16));
                k.store_vector(tile, slot.tile_at + offset, words);
            };
            if (!read.buffer) return by_element();
            Expr whole = line + 8 <= line_count;
            if (!inside) whole = whole && q < k_terms;
            k.if_(
                whole,
                [&] {
                    k.copy_to_shared(tile, slot.tile_at + offset, *read.buffer, element(line, q));
                },
                by_element);
        });
    }
}

Staging stage_operand(KernelBuilder& k, const OperandShape& o) {
    Staging st{.read = o.read};
    st.width = o.read.buffer && o.k_contiguous && !o.gaps && o.pairs % 4 == 0 ? 4 : 1;
    const int runs = o.pairs / st.width;  // a line's slots
    st.slots = contraction::tile_slots(k, o.lines * runs, o.threads, [&](const Expr& e) {
        Var line = k.let(o.k_contiguous ? e / runs : e % o.lines, "line");
        Var c = k.let((o.k_contiguous ? e % runs : e / o.lines) * st.width, "c");
        return TileSlot{k.let(line * o.ld + c, "tile_at"),
                        k.let(o.clamped_line(line), "operand_line"), k.let(c * 2, "q"),
                        std::nullopt};
    });
    for (size_t i = 0; i < st.slots.size(); ++i) {
        st.pairs.emplace_back();
        for (int j = 0; j < st.width; ++j) st.pairs.back().push_back(k.let(DType::u32, 0, "pair"));
    }
    return st;
}

void staged_steps(KernelBuilder& k, int stages, const Expr& end, int step,
                  const std::function<void(const Expr& at, const Expr& stage)>& issue,
                  const std::function<void(const Expr& at, const Expr& stage)>& sum,
                  const std::function<void(const Expr& stage)>& land) {
    const int S = stages;
    for (int i = 0; i + 1 < S; ++i) {
        k.if_(Expr(i * step) < end, [&] {
            issue(i * step, i);
            if (land) land(i);
        });
        k.barrier(S - 1);  // closes step i's group of copies
    }
    k.for_(
        0, end,
        [&](Expr at) {
            Var index = k.let(at / step, "step");
            k.barrier(S - 2);  // step `index` has landed
            Var ahead = k.let(at + (S - 1) * step, "ahead");
            Var ahead_stage = k.let((index + (S - 1)) % S, "ahead_stage");
            k.if_(ahead < end, [&] { issue(ahead, ahead_stage); });
            sum(at, k.let(index % S, "stage"));
            if (land) k.if_(ahead < end, [&] { land(ahead_stage); });
        },
        step);
}

}  // namespace kiln::ops::tensor_core
