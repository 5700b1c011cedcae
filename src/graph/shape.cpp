// Shape arithmetic for graph tensors.
#include "graph/shape.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/error.hpp"

namespace kiln::graph {

std::string to_string(const Shape& s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
}

int64_t checked_element_count(const Shape& s, const char* op) {
    int64_t n = 1;
    for (int64_t e : s) {
        if (e < 0) fail("{}: shape {} has a negative extent", op, to_string(s));
        if (e != 0 && n > kMaxElements / e)
            fail("{}: shape {} has more than 2^56 elements", op, to_string(s));
        n *= e;
    }
    return n;
}

int64_t element_count(const Shape& s) {
    int64_t n = 1;
    for (int64_t e : s) n *= e;
    return n;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
    std::vector<int64_t> strides(s.size());
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
        strides[i] = stride;
        stride *= s[i];
    }
    return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    const size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (size_t i = 0; i < rank; ++i) {
        const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (x != y && x != 1 && y != 1)
            fail("{}: shapes {} and {} do not broadcast (axis {} of the result: {} vs {})", op,
                 to_string(a), to_string(b), i, x, y);
        out[i] = x == 1 ? y : x;
    }
    return out;
}

int normalize_axis(int64_t axis, size_t rank, const char* op) {
    const auto r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
        fail("{}: axis {} is out of range for a tensor of rank {} (expected {} to {})", op, axis,
             rank, -r, r - 1);
    return static_cast<int>(axis < 0 ? axis + r : axis);
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, size_t rank, const char* op) {
    std::vector<int> out;
    if (axes.empty()) {
        for (size_t i = 0; i < rank; ++i) out.push_back(static_cast<int>(i));
        return out;
    }
    for (int64_t a : axes) out.push_back(normalize_axis(a, rank, op));
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end())
        fail("{}: axes [{}] name an axis twice", op, fmt::join(axes, ", "));
    return out;
}

std::vector<int64_t> unravel(int64_t index, const Shape& s) {
    std::vector<int64_t> c(s.size());
    for (size_t i = s.size(); i-- > 0;) {
        c[i] = s[i] ? index % s[i] : 0;
        index = s[i] ? index / s[i] : 0;
    }
    return c;
}

int64_t ravel(const std::vector<int64_t>& coords, const Shape& s) {
    int64_t index = 0;
    for (size_t i = 0; i < s.size(); ++i) index = index * s[i] + coords[i];
    return index;
}

}  // namespace kiln::graph
