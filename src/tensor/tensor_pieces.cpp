// Tensors put together along a new axis (stack) and taken apart into views (split, chunk).
#include <algorithm>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

Tensor stack(const std::vector<Tensor>& parts, int64_t axis) {
    if (parts.empty()) fail("stack: no tensors to stack");
    const Shape& first = parts[0].shape();
    const int ax = graph::normalize_axis(axis, first.size() + 1, "stack");
    std::vector<Tensor> lifted;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].shape() != first)
            fail("stack: tensor {} is {} and tensor 0 {}; expected one shape", i,
                 graph::to_string(parts[i].shape()), graph::to_string(first));
        lifted.push_back(parts[i].unsqueeze(ax));
    }
    return concat(lifted, ax);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
    const int ax = graph::normalize_axis(axis, x.rank(), "split");
    const int64_t extent = x.size(ax);
    int64_t total = 0;  // stops past the extent, so never overflows
    for (size_t i = 0; i < sizes.size() && total <= extent; ++i) {
        if (sizes[i] < 0) fail("split: sizes [{}]; expected sizes >= 0", fmt::join(sizes, ", "));
        total += std::min(sizes[i], extent + 1);
    }
    if (total != extent)
        fail("split: sizes [{}] do not add up to {}, the extent of axis {} of {}",
             fmt::join(sizes, ", "), extent, axis, graph::to_string(x.shape()));
    std::vector<Tensor> pieces;
    int64_t start = 0;
    for (int64_t s : sizes) {
        pieces.push_back(x.slice(ax, start, start + s));
        start += s;
    }
    return pieces;
}

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t axis) {
    const int ax = graph::normalize_axis(axis, x.rank(), "split");
    if (size < 1) fail("split: size {}; expected a piece size of at least 1", size);
    const int64_t extent = x.size(ax);
    if (extent == 0) return {x};
    std::vector<int64_t> sizes;
    for (int64_t start = 0; start < extent; start += size)
        sizes.push_back(std::min(size, extent - start));
    return split(x, sizes, ax);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis) {
    const int ax = graph::normalize_axis(axis, x.rank(), "chunk");
    if (chunks < 1) fail("chunk: {} chunks; expected at least 1", chunks);
    const int64_t extent = x.size(ax);
    return split(x, std::max<int64_t>(1, extent / chunks + (extent % chunks != 0)), ax);
}

}  // namespace kiln
