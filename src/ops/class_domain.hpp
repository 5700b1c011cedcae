// The schedule domains of an op with an exact and a tensor-core class: both classes' points in one
// list (one index space for a planner), and the part a class runs on a device.
#pragma once

#include <span>
#include <vector>

namespace kiln::ops {

// The exact points, then the tensor-core points.
template <typename Point>
std::vector<Point> both_classes(const std::vector<Point>& exact,
                                const std::vector<Point>& tensor_core) {
    std::vector<Point> all = exact;
    all.insert(all.end(), tensor_core.begin(), tensor_core.end());
    return all;
}

// The tensor-core part of `all` (whose first `exact` points are the exact class's) where the class
// runs on tensor cores, the exact part otherwise.
template <typename Point>
std::span<const Point> class_points(const std::vector<Point>& all, size_t exact,
                                    bool on_tensor_cores) {
    const std::span<const Point> points = all;
    return on_tensor_cores ? points.subspan(exact) : points.first(exact);
}

}  // namespace kiln::ops
