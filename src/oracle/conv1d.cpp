// conv1d's oracle: plain loops, one fma per tap inside x, channels then taps ascending.
#include "oracle/conv1d.hpp"

#include <algorithm>
#include <cmath>

#include "kiln/error.hpp"
#include "kiln/semantics.hpp"
#include "ops/matmul/matmul.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

namespace {

// Runs output(at, taps) for every output of y, at its index in a dense y; taps(f) calls f(x, w)
// (f32 values) for each of the output's taps inside x, channels then taps ascending.
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
                        auto taps = [&](const auto& f) {
                            for (int64_t ic = 0; ic < cg; ++ic)
                                for (int64_t r = 0; r < s.kernel; ++r) {
                                    const int64_t pos = t * p.stride - p.padding + r * p.dilation;
                                    if (pos < 0 || pos >= s.length) continue;  // padding: skipped
                                    const int64_t xi = xv.offset + n * xv.batch_stride +
                                                       (oc / og * cg + ic) * x_channel + pos;
                                    const int64_t wi = (oc * cg + ic) * s.kernel + r;
                                    f(S::to_f32(load<V>(x, static_cast<size_t>(xi))),
                                      S::to_f32(load<V>(w, static_cast<size_t>(wi))));
                                }
                        };
                        output(static_cast<size_t>((n * s.out_channels + oc) * l_out + t), taps);
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
    each_output(input, x, xv, w, s, [&](size_t at, const auto& taps) {
        float acc = 0.0f;
        taps([&](float xv_, float wv) { acc = std::fma(xv_, wv, acc); });
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
    each_output(input, x, xv, w, s, [&](size_t at, const auto& taps) {
        double magnitude = 0;
        taps([&](float xv_, float wv) { magnitude += std::fabs(double{xv_} * wv); });
        bound[at] = ops::kTensorCoreBound * static_cast<double>(terms) * magnitude;
    });
    return bound;
}

}  // namespace kiln::oracle
