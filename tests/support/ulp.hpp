// Error of an f32 result in ulp of the exact value (a long double reference), and bitwise
// equality of f32 results with every NaN equal, for the math tests.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln::test {

inline float from_bits(uint32_t u) {
    return std::bit_cast<float>(u);
}
inline uint32_t to_bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

// |y - ref| in units of the last place of the exact value (2^-149 below the normal range).
// An overflowing reference counts as correct only for inf; NaN must match NaN; a zero or an
// infinity must have the reference's sign.
inline double ulp_error(float y, long double ref) {
    constexpr double kNever = std::numeric_limits<double>::infinity();
    if (std::isnan(ref) || std::isnan(y)) return std::isnan(ref) && std::isnan(y) ? 0 : kNever;
    if ((y == 0 || std::isinf(y)) && std::signbit(y) != std::signbit(ref)) return kNever;
    const float rounded = static_cast<float>(ref);
    if (std::isinf(rounded) || std::isinf(y)) {
        if (rounded == y) return 0;
        // An overflow is a rounding of the exact value past FLT_MAX: measure against 2^128.
        if (std::isinf(y) && std::fabs(ref) >= std::numeric_limits<float>::max())
            return static_cast<double>((std::ldexp(1.0L, 128) - std::fabs(ref)) /
                                       std::ldexp(1.0L, 104));
        return kNever;
    }
    int e = 0;
    std::frexp(ref, &e);  // |ref| in [2^(e-1), 2^e)
    const int ulp_exp = std::max(e - 1, -126) - 23;
    return static_cast<double>(std::fabs(static_cast<long double>(y) - ref) /
                               std::ldexp(1.0L, ulp_exp));
}

inline bool same_bits(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || to_bits(a) == to_bits(b);
}

}  // namespace kiln::test
