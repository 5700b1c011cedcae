// The user-written kernels in plain C++: each row's folds in the canonical order (256 lanes,
// chunk 1), every operation in f32 as written, no contraction.
#include "oracle/user_kernels.hpp"

#include <cmath>

#include "kiln/semantics.hpp"
#include "ops/user_kernels.hpp"
#include "oracle/test_kernels.hpp"

namespace kiln::oracle {
namespace {

constexpr int kLanes = ops::kUserFoldLanes;

float sum(const std::vector<float>& v) {
    return canonical_fold(v, kLanes, 1, 0.0f, [](float a, float b) { return a + b; });
}

std::vector<float> row(const std::vector<float>& x, int64_t n, int64_t r) {
    return {x.begin() + r * n, x.begin() + (r + 1) * n};
}

}  // namespace

std::vector<float> add_square(const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<float> y(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const float s = a[i] + b[i];
        y[i] = s * s;
    }
    return y;
}

std::vector<float> softmax_rows(int64_t n, const std::vector<float>& x, const BatchFn& exp) {
    const int64_t rows = static_cast<int64_t>(x.size()) / n;
    std::vector<float> out(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<float> v = row(x, n, r);
        const float m = canonical_fold(v, kLanes, 1, -INFINITY, [](float a, float b) {
            return semantics::kiln_max_f32(a, b);
        });
        std::vector<float> shifted(v.size());
        for (size_t i = 0; i < v.size(); ++i) shifted[i] = v[i] - m;
        const std::vector<float> e = exp(shifted);
        const float s = sum(e);
        for (int64_t i = 0; i < n; ++i)
            out[static_cast<size_t>(r * n + i)] = e[static_cast<size_t>(i)] / s;
    }
    return out;
}

std::vector<float> layer_norm_rows(int64_t n, const std::vector<float>& x,
                                   const std::vector<float>& g, const std::vector<float>& b,
                                   float eps) {
    const int64_t rows = static_cast<int64_t>(x.size()) / n;
    const float n_f32 = static_cast<float>(n);
    std::vector<float> out(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<float> v = row(x, n, r);
        const float mean = sum(v) / n_f32;
        std::vector<float> sq(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
            const float d = v[i] - mean;
            sq[i] = d * d;
        }
        const float inv = 1.0f / std::sqrt(sum(sq) / n_f32 + eps);
        for (int64_t i = 0; i < n; ++i) {
            const auto at = static_cast<size_t>(i);
            const float scaled = (v[at] - mean) * inv * g[at];
            out[static_cast<size_t>(r * n + i)] = scaled + b[at];
        }
    }
    return out;
}

std::vector<float> rms_norm_rows(int64_t n, const std::vector<float>& x,
                                 const std::vector<float>& w, float eps) {
    const int64_t rows = static_cast<int64_t>(x.size()) / n;
    const float n_f32 = static_cast<float>(n);
    std::vector<float> out(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> sq = row(x, n, r);
        for (float& v : sq) v = v * v;
        const float inv = 1.0f / std::sqrt(sum(sq) / n_f32 + eps);
        for (int64_t i = 0; i < n; ++i) {
            const auto at = static_cast<size_t>(r * n + i);
            out[at] = x[at] * inv * w[static_cast<size_t>(i)];
        }
    }
    return out;
}

}  // namespace kiln::oracle
