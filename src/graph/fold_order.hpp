// The canonical order of a graph fold over n elements: part of every reduction's definition,
// fixed by n alone.
//   n <= 2^14: one level. lanes(n) lanes (the power of two at or above n/4, at most 256), chunk 1:
//              lane j takes elements j, j+W, j+2W, ... left to right from the identity; then the
//              halving tree lane[j] = op(lane[j], lane[j+s]) for s = W/2 ... 1.
//   n >  2^14: segments of 4096 consecutive elements, each folded by the one-level order with
//              256 lanes (the last segment's missing elements are simply absent), then the
//              ceil(n / 4096) segment values folded by the canonical order of their own count.
// Segments make a long fold parallel without changing its bits: one thread group a segment, then
// a short fold of the segments' values (the planner's two-launch form), or all in one thread
// group; either way the same order.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace kiln::graph {

inline constexpr int64_t kSegmentedAbove = int64_t{1} << 14;
inline constexpr int64_t kSegment = 4096;
inline constexpr int kSegmentLanes = 256;

// The lanes of the one-level order over n elements.
inline int level_lanes(int64_t n) {
    const auto quarter = static_cast<uint64_t>(std::max<int64_t>((n + 3) / 4, 1));
    return static_cast<int>(std::min<uint64_t>(256, std::bit_ceil(quarter)));
}

inline bool segmented(int64_t n) {
    return n > kSegmentedAbove;
}

inline int64_t segment_count(int64_t n) {
    return (n + kSegment - 1) / kSegment;
}

// The lanes of the order's last level over n elements: the one level, or that of the segment
// values (of their segment values, and so on). Threads sharing a fold's last level divide them.
inline int last_level_lanes(int64_t n) {
    while (segmented(n)) n = segment_count(n);
    return level_lanes(n);
}

}  // namespace kiln::graph
