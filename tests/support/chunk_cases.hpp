// Values whose sums show the chunks of kiln/ops/contraction_order.hpp, for the contraction tests:
// two rows of k terms (A's rows of a matmul with B a column, w's output channels of a conv1d
// whose kernel spans x), one case of one chunk and one of two.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace kiln::test {

//   row 0: 2^24 at p = 0, 1 at p = 256 and 257: 2^24 in one chain (2^24 + 1 rounds to 2^24
//          twice), 2^24 + 2 with the second chunk (1 + 1) summed on its own;
//   row 1: -2^-100 * 2^-100 at p = 0 (underflows to -0), -0 * 1 after: -0 in one chain
//          (-0 + -0), +0 with a second chunk (its chain from +0: -0 + +0 is +0, then -0 + +0).
// With k = 256 there is one chunk: 2^24 and -0 (a chunk closed twice would make -0 + +0 = +0).
struct ChunkCase {
    int64_t k;
    float row0, row1;
};
inline constexpr ChunkCase kChunkCases[] = {{256, 0x1p24f, -0.0f}, {300, 0x1p24f + 2, 0.0f}};

// The rows (2 x k, row 0 first) and the column (k): the column's first value is 2^-100 (row 1's
// first product), so row 0's first value is 2^124.
inline std::pair<std::vector<float>, std::vector<float>> chunk_operands(int64_t k) {
    std::vector<float> rows(static_cast<size_t>(2 * k), 0.0f), column(static_cast<size_t>(k), 1.0f);
    column[0] = 0x1p-100f;
    rows[0] = 0x1p124f;
    if (k > 257) rows[256] = rows[257] = 1.0f;
    rows[static_cast<size_t>(k)] = -0x1p-100f;
    for (int64_t p = 1; p < k; ++p) rows[static_cast<size_t>(k + p)] = -0.0f;
    return {rows, column};
}

inline void expect_chunk_sums(const ChunkCase& c, float row0, float row1) {
    EXPECT_EQ(std::bit_cast<uint32_t>(row0), std::bit_cast<uint32_t>(c.row0)) << row0;
    EXPECT_EQ(std::bit_cast<uint32_t>(row1), std::bit_cast<uint32_t>(c.row1)) << row1;
}

// The same for an oracle's output: two f32 values as bytes.
inline void expect_chunk_sums(const ChunkCase& c, const std::vector<uint8_t>& f32_bytes) {
    ASSERT_EQ(f32_bytes.size(), 8u);
    float sums[2];
    std::memcpy(sums, f32_bytes.data(), sizeof sums);
    expect_chunk_sums(c, sums[0], sums[1]);
}

}  // namespace kiln::test
