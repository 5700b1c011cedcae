// matmul's oracle: plain loops, one fma per term in k order.
#include "oracle/matmul.hpp"

#include <cmath>

#include "kiln/error.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

std::vector<uint8_t> matmul(DType input, DType out, const std::vector<uint8_t>& a,
                            const ops::MatmulOperand& av, const std::vector<uint8_t>& b,
                            const ops::MatmulOperand& bv, const ops::MatmulShape& s) {
    if (input != DType::f32 && input != DType::f16 && input != DType::bf16)
        fail("oracle matmul: inputs {}; expected f32, f16 or bf16", name(input));
    if (out != DType::f32 && out != input)
        fail("oracle matmul: output {}; expected f32 or {}", name(out), name(input));
    std::vector<uint8_t> c(static_cast<size_t>(s.batch * s.m * s.n) * size_of(out));
    // Element (r, col) of batch `bt` of a view of a rows x cols matrix.
    auto index = [](const ops::MatmulOperand& v, int64_t rows, int64_t cols, int64_t bt, int64_t r,
                    int64_t col) {
        const int64_t ld = v.ld != 0 ? v.ld : (v.transposed ? rows : cols);
        return static_cast<size_t>(v.offset + bt * v.batch_stride +
                                   (v.transposed ? col * ld + r : r * ld + col));
    };
    dispatch(input, [&]<DType T>() {
        if constexpr (T == DType::f32 || T == DType::f16 || T == DType::bf16) {
            using S = Scalar<T>;
            using V = typename S::V;
            for (int64_t bt = 0; bt < s.batch; ++bt)
                for (int64_t i = 0; i < s.m; ++i)
                    for (int64_t j = 0; j < s.n; ++j) {
                        float acc = 0.0f;
                        for (int64_t p = 0; p < s.k; ++p) {
                            const float x = S::to_f32(load<V>(a, index(av, s.m, s.k, bt, i, p)));
                            const float y = S::to_f32(load<V>(b, index(bv, s.k, s.n, bt, p, j)));
                            acc = std::fma(x, y, acc);
                        }
                        const size_t at = static_cast<size_t>((bt * s.m + i) * s.n + j);
                        if (out == DType::f32)
                            store<float>(c, at, acc);
                        else
                            store<V>(c, at, S::from_f32(acc));
                    }
        }
    });
    return c;
}

}  // namespace kiln::oracle
