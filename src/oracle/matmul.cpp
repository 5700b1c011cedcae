// matmul's oracle: plain loops, one fma per term in k order, in the chunks of
// kiln/ops/contraction_order.hpp.
#include "oracle/matmul.hpp"

#include <cmath>
#include <utility>

#include "kiln/error.hpp"
#include "oracle/contraction_sum.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

namespace {

using Bytes = std::vector<uint8_t>;

// Element (r, col) of batch `bt` of a view of a rows x cols matrix.
size_t index(const ops::MatmulOperand& v, int64_t rows, int64_t cols, int64_t bt, int64_t r,
             int64_t col) {
    const int64_t ld = v.ld != 0 ? v.ld : (v.transposed ? rows : cols);
    return static_cast<size_t>(v.offset + bt * v.batch_stride +
                               (v.transposed ? col * ld + r : r * ld + col));
}

// Calls visit(at, term) for each output (`at`: its dense index), where term(p) is the pair
// (a_p, b_p) of its sum as f32.
template <typename Visit>
void each_output(DType input, const Bytes& a, const ops::MatmulOperand& av, const Bytes& b,
                 const ops::MatmulOperand& bv, const ops::MatmulShape& s, Visit visit) {
    if (input != DType::f32 && input != DType::f16 && input != DType::bf16)
        fail("oracle matmul: inputs {}; expected f32, f16 or bf16", name(input));
    dispatch(input, [&]<DType T>() {
        if constexpr (T == DType::f32 || T == DType::f16 || T == DType::bf16) {
            using S = Scalar<T>;
            using V = typename S::V;
            for (int64_t bt = 0; bt < s.batch; ++bt)
                for (int64_t i = 0; i < s.m; ++i)
                    for (int64_t j = 0; j < s.n; ++j)
                        visit(static_cast<size_t>((bt * s.m + i) * s.n + j), [&](int64_t p) {
                            return std::pair{S::to_f32(load<V>(a, index(av, s.m, s.k, bt, i, p))),
                                             S::to_f32(load<V>(b, index(bv, s.k, s.n, bt, p, j)))};
                        });
        }
    });
}

}  // namespace

Bytes matmul(DType input, DType out, const Bytes& a, const ops::MatmulOperand& av, const Bytes& b,
             const ops::MatmulOperand& bv, const ops::MatmulShape& s) {
    if (out != DType::f32 && out != input && is_float(input))
        fail("oracle matmul: output {}; expected f32 or {}", name(out), name(input));
    Bytes c(static_cast<size_t>(s.batch * s.m * s.n) * size_of(out));
    each_output(input, a, av, b, bv, s, [&](size_t at, const auto& term) {
        const float acc = contraction_sum(s.k, [&](int64_t p, float sum) {
            const auto [x, y] = term(p);
            return std::fma(x, y, sum);
        });
        if (out == DType::f32)
            store<float>(c, at, acc);
        else
            store<uint16_t>(
                c, at,
                out == DType::f16 ? semantics::f32_to_f16(acc) : semantics::f32_to_bf16(acc));
    });
    return c;
}

std::vector<double> matmul_tensor_core_bound(DType input, const Bytes& a,
                                             const ops::MatmulOperand& av, const Bytes& b,
                                             const ops::MatmulOperand& bv,
                                             const ops::MatmulShape& s) {
    std::vector<double> bound(static_cast<size_t>(s.batch * s.m * s.n));
    each_output(input, a, av, b, bv, s, [&](size_t at, const auto& term) {
        double magnitude = 0;
        for (int64_t p = 0; p < s.k; ++p) {
            const auto [x, y] = term(p);
            magnitude += std::fabs(double{x} * y);
        }
        bound[at] = ops::kTensorCoreBound * static_cast<double>(s.k) * magnitude;
    });
    return bound;
}

}  // namespace kiln::oracle
