// Shapes of graph tensors: element counts with overflow checks, row-major strides, numpy
// broadcasting, axis normalization and coordinate <-> linear index conversion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::graph {

using Shape = std::vector<int64_t>;

// The largest element count a tensor may have (every byte offset fits in int64).
inline constexpr int64_t kMaxElements = int64_t{1} << 56;

std::string to_string(const Shape& s);  // "[4, 8]"
// The product of the extents; kiln::Error naming `op` and the shape when an extent is negative
// or the product exceeds kMaxElements.
int64_t checked_element_count(const Shape& s, const char* op);
// The product of the extents of a shape known to be valid.
int64_t element_count(const Shape& s);
// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
// The broadcast of two shapes (numpy rules); kiln::Error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// An axis in [-rank, rank) as [0, rank); kiln::Error naming `op` otherwise.
int normalize_axis(int64_t axis, size_t rank, const char* op);
// Sorted, unique axes; empty `axes` means every axis. kiln::Error on a bad or repeated axis.
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, size_t rank, const char* op);

// Coordinates of a linear row-major index, and back.
std::vector<int64_t> unravel(int64_t index, const Shape& s);
int64_t ravel(const std::vector<int64_t>& coords, const Shape& s);

}  // namespace kiln::graph
