// The conformance suite's comparison: a result against its oracle, element by element. Floats
// (f32, f16, bf16) must match bit for bit, except that a NaN matches any NaN (NaNs in the same
// places); integers and bools must match exactly. A class with a stated bound (matmul's tensor
// cores) is compared within it instead. The first differing element is reported with both
// values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/dtype.hpp"

namespace kiln::conformance {

struct Mismatch {
    int64_t index = -1;     // the first differing element (-1: the sizes differ)
    std::string got, want;  // its values, e.g. "1.5 (0x3fc00000)"
    int64_t count = 0;      // how many elements differ
};

// Compares raw element bytes of `dtype`; nullopt when they agree.
std::optional<Mismatch> compare(DType dtype, const std::vector<uint8_t>& got,
                                const std::vector<uint8_t>& want);

// Compares f32 results with the f32 oracle within a bound per element: |got - want| <= bound[i],
// NaNs in the same places; nullopt when every element lies within.
std::optional<Mismatch> compare_within(const std::vector<uint8_t>& got,
                                       const std::vector<uint8_t>& want,
                                       const std::vector<double>& bound);

// One element's value as text: floats as their value and bits, integers in decimal.
std::string element_text(DType dtype, const uint8_t* element);

}  // namespace kiln::conformance
