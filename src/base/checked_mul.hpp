// checked_mul: the product of two shape values, or nothing when it does not fit in int64, so
// entry points reject a wrapped shape before anything is sized from it.
#pragma once

#include <cstdint>
#include <optional>

namespace kiln {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
    int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
    return product;
}

}  // namespace kiln
