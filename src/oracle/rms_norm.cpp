// rms_norm's oracle: the canonical fold of the squares in f32, then the normalize pass.
#include "oracle/rms_norm.hpp"

#include <cmath>

#include "kiln/error.hpp"
#include "kiln/ops/rms_norm.hpp"
#include "oracle/scalar.hpp"
#include "oracle/test_kernels.hpp"

namespace kiln::oracle {

void rms_norm(DType type, int64_t n, float eps, const std::vector<uint8_t>& x,
              const std::vector<uint8_t>& w, std::vector<uint8_t>& out) {
    if (type != DType::f32 && type != DType::f16 && type != DType::bf16)
        fail("oracle rms_norm: dtype {}; expected f32, f16 or bf16", name(type));
    const size_t width = size_of(type), len = static_cast<size_t>(n);
    if (n < 1 || x.size() % (len * width) != 0 || w.size() != len * width || out.size() != x.size())
        fail("oracle rms_norm: x, w, out of {}, {}, {} bytes do not fit rows of n = {} {}",
             x.size(), w.size(), out.size(), n, name(type));
    const ir::FoldSpec fold = ops::rms_norm_fold(n).spec;
    dispatch(type, [&]<DType T>() {
        if constexpr (T == DType::f32 || T == DType::f16 || T == DType::bf16) {
            using S = Scalar<T>;
            using V = typename S::V;
            const size_t rows = x.size() / (len * width);
            std::vector<float> squares(len);
            for (size_t r = 0; r < rows; ++r) {
                for (size_t i = 0; i < len; ++i) {
                    const float v = S::to_f32(load<V>(x, r * len + i));
                    squares[i] = v * v;
                }
                const float ss = canonical_fold(squares, fold.lanes, fold.chunk, 0.0f,
                                                [](float a, float b) { return a + b; });
                const float mean = ss / static_cast<float>(n);
                const float inv = 1.0f / std::sqrt(mean + eps);
                for (size_t i = 0; i < len; ++i) {
                    const float v = S::to_f32(load<V>(x, r * len + i));
                    const float y = (v * inv) * S::to_f32(load<V>(w, i));
                    store<V>(out, r * len + i, S::from_f32(y));
                }
            }
        }
    });
}

}  // namespace kiln::oracle
