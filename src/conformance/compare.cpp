// compare: bitwise equality of results, NaNs in the same places.
#include "conformance/compare.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "kiln/semantics.hpp"

namespace kiln::conformance {

namespace {

uint64_t raw(const uint8_t* p, size_t width) {
    uint64_t v = 0;
    std::memcpy(&v, p, width);
    return v;
}

bool is_nan(DType t, const uint8_t* p) {
    if (t == DType::f32) return (raw(p, 4) & 0x7fffffffu) > 0x7f800000u;
    if (t == DType::f16) return (raw(p, 2) & 0x7fff) > 0x7c00;
    if (t == DType::bf16) return (raw(p, 2) & 0x7fff) > 0x7f80;
    return false;
}

}  // namespace

std::string element_text(DType t, const uint8_t* p) {
    const size_t w = size_of(t);
    const uint64_t bits = raw(p, w);
    switch (t) {
        case DType::f32: {
            float f;
            std::memcpy(&f, p, 4);
            return fmt::format("{} (0x{:08x})", f, bits);
        }
        case DType::f16:
            return fmt::format("{} (0x{:04x})", semantics::f16_to_f32(uint16_t(bits)), bits);
        case DType::bf16:
            return fmt::format("{} (0x{:04x})", semantics::bf16_to_f32(uint16_t(bits)), bits);
        case DType::i8:
            return fmt::format("{}", static_cast<int8_t>(bits));
        case DType::i32:
            return fmt::format("{}", static_cast<int32_t>(bits));
        case DType::i64:
            return fmt::format("{}", static_cast<int64_t>(bits));
        default:
            return fmt::format("{}", bits);
    }
}

std::optional<Mismatch> compare(DType t, const std::vector<uint8_t>& got,
                                const std::vector<uint8_t>& want) {
    if (got.size() != want.size())
        return Mismatch{-1, fmt::format("{} bytes", got.size()),
                        fmt::format("{} bytes", want.size()), 1};
    const size_t w = size_of(t);
    std::optional<Mismatch> first;
    for (size_t i = 0; i < want.size() / w; ++i) {
        const uint8_t* g = got.data() + i * w;
        const uint8_t* e = want.data() + i * w;
        if (std::memcmp(g, e, w) == 0 || (is_nan(t, g) && is_nan(t, e))) continue;
        if (!first) first = Mismatch{int64_t(i), element_text(t, g), element_text(t, e), 0};
        ++first->count;
    }
    return first;
}

std::optional<Mismatch> compare_within(const std::vector<uint8_t>& got,
                                       const std::vector<uint8_t>& want,
                                       const std::vector<double>& bound) {
    if (got.size() != want.size() || want.size() != 4 * bound.size())
        return Mismatch{-1, fmt::format("{} bytes", got.size()),
                        fmt::format("{} bytes", 4 * bound.size()), 1};
    std::optional<Mismatch> first;
    for (size_t i = 0; i < bound.size(); ++i) {
        const uint8_t* g = got.data() + 4 * i;
        const uint8_t* e = want.data() + 4 * i;
        float x, y;
        std::memcpy(&x, g, 4);
        std::memcpy(&y, e, 4);
        const bool nan_g = is_nan(DType::f32, g), nan_e = is_nan(DType::f32, e);
        if (nan_g ? nan_e : !nan_e && (x == y || std::fabs(double{x} - double{y}) <= bound[i]))
            continue;
        if (!first)
            first = Mismatch{int64_t(i), element_text(DType::f32, g),
                             fmt::format("{} within {}", element_text(DType::f32, e), bound[i]), 0};
        ++first->count;
    }
    return first;
}

}  // namespace kiln::conformance
