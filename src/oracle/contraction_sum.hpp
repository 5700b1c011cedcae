// The exact class's sum of a contraction's terms in plain C++ (kiln/ops/contraction_order.hpp):
// chunks of ops::kChunkTerms, each an fma chain from +0 in order, their sums added left to right.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kiln/ops/contraction_order.hpp"

namespace kiln::oracle {

// The sum of k terms where add(p, s) returns s after term p: std::fma(a_p, b_p, s), or s itself
// for a term the op skips.
template <typename Add>
float contraction_sum(int64_t k, const Add& add) {
    float total = 0.0f;
    for (int64_t c = 0; c < ops::contraction_chunks(k); ++c) {
        const int64_t begin = c * ops::kChunkTerms, end = std::min(k, begin + ops::kChunkTerms);
        float s = 0.0f;
        for (int64_t p = begin; p < end; ++p) s = add(p, s);
        total = c == 0 ? s : total + s;
    }
    return total;
}

}  // namespace kiln::oracle
