// conv1d's oracle: plain loops, one fma per tap inside x, channels then taps ascending, in the
// chunks of kiln/ops/contraction_order.hpp.
#include "oracle/conv1d.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "kiln/error.hpp"
#include "kiln/semantics.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/contraction_sum.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

namespace {

// Runs output(at, tap) for every output of y, at its index in a dense y; tap(q) is the (x, w)
// pair (f32 values) of term q = ic*kernel + r, or nothing where that tap falls in the padding.
template <typename Output>
void each_output(DType input, const std::vector<uint8_t>& x, const ops::Conv1dView& xv,
                 const std::vector<uint8_t>& w, const ops::Conv1dShape& s, const Output& output) {
    const ops::Conv1dParams& p = s.params;
    const int64_t l_out = s.out_length();
    if (l_out < 1) fail("oracle conv1d: the kernel is longer than the padded input");
    const int64_t cg = s.in_channels / p.groups, og = s.out_channels / p.groups;
    const int64_t x_channel = xv.channel_stride != 0 ? xv.channel_stride : s.length;
    dispatch(input, [&]<DType T>() {
        if constexpr (T == DType::f32 || T == DType::f16 || T == DType::bf16) {
            using S = Scalar<T>;
            using V = typename S::V;
            for (int64_t n = 0; n < s.batch; ++n)
                for (int64_t oc = 0; oc < s.out_channels; ++oc)
                    for (int64_t t = 0; t < l_out; ++t) {
                        auto tap = [&](int64_t q) -> std::optional<std::pair<float, float>> {
                            const int64_t ic = q / s.kernel, r = q % s.kernel;
                            const int64_t pos = t * p.stride - p.padding + r * p.dilation;
                            if (pos < 0 || pos >= s.length) return std::nullopt;  // skipped
                            const int64_t xi = xv.offset + n * xv.batch_stride +
                                               (oc / og * cg + ic) * x_channel + pos;
                            const int64_t wi = (oc * cg + ic) * s.kernel + r;
                            return std::pair{S::to_f32(load<V>(x, static_cast<size_t>(xi))),
                                             S::to_f32(load<V>(w, static_cast<size_t>(wi)))};
                        };
                        output(static_cast<size_t>((n * s.out_channels + oc) * l_out + t), tap);
                    }
        }
    });
}

}  // namespace

std::vector<uint8_t> conv1d(DType input, DType out, const std::vector<uint8_t>& x,
                            const ops::Conv1dView& xv, const std::vector<uint8_t>& w,
                            const ops::Conv1dShape& s) {
    if (input != DType::f32 && input != DType::f16 && input != DType::bf16)
        fail("oracle conv1d: inputs {}; expected f32, f16 or bf16", name(input));
    if (out != DType::f32 && out != input)
        fail("oracle conv1d: output {}; expected f32 or {}", name(out), name(input));
    const int64_t count = s.batch * s.out_channels * std::max<int64_t>(s.out_length(), 0);
    std::vector<uint8_t> y(static_cast<size_t>(count) * size_of(out));
    const int64_t terms = s.in_channels / s.params.groups * s.kernel;
    each_output(input, x, xv, w, s, [&](size_t at, const auto& tap) {
        const float acc = contraction_sum(terms, [&](int64_t q, float sum) {
            const auto xw = tap(q);
            return xw ? std::fma(xw->first, xw->second, sum) : sum;
        });
        if (out == DType::f32)
            store<float>(y, at, acc);
        else
            store<uint16_t>(
                y, at,
                out == DType::f16 ? semantics::f32_to_f16(acc) : semantics::f32_to_bf16(acc));
    });
    return y;
}

std::vector<double> conv1d_tensor_core_bound(DType input, const std::vector<uint8_t>& x,
                                             const ops::Conv1dView& xv,
                                             const std::vector<uint8_t>& w,
                                             const ops::Conv1dShape& s) {
    const int64_t terms = s.in_channels / s.params.groups * s.kernel;
    std::vector<double> bound(
        static_cast<size_t>(s.batch * s.out_channels * std::max<int64_t>(s.out_length(), 0)));
    each_output(input, x, xv, w, s, [&](size_t at, const auto& tap) {
        double magnitude = 0;
        for (int64_t q = 0; q < terms; ++q)
            if (const auto xw = tap(q)) magnitude += std::fabs(double{xw->first} * xw->second);
        bound[at] = ops::kTensorCoreBound * static_cast<double>(terms) * magnitude;
    });
    return bound;
}

}  // namespace kiln::oracle
