// ceil_div: how many groups of `per` cover `n` items (grid sizes, tiles, per-thread counts).
#pragma once

#include <cstdint>

namespace kiln {

constexpr int64_t ceil_div(int64_t n, int64_t per) {
    return (n + per - 1) / per;
}

}  // namespace kiln
