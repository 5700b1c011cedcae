// conv1d's oracle: plain loops, one fma per tap inside x, channels then taps ascending.
#include "oracle/conv1d.hpp"

#include <cmath>

#include "kiln/error.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

std::vector<uint8_t> conv1d(DType input, DType out, const std::vector<uint8_t>& x,
                            const ops::Conv1dView& xv, const std::vector<uint8_t>& w,
                            const ops::Conv1dShape& s) {
    if (input != DType::f32 && input != DType::f16 && input != DType::bf16)
        fail("oracle conv1d: inputs {}; expected f32, f16 or bf16", name(input));
    if (out != DType::f32 && out != input)
        fail("oracle conv1d: output {}; expected f32 or {}", name(out), name(input));
    const ops::Conv1dParams& p = s.params;
    const int64_t l_out = s.out_length();
    if (l_out < 1) fail("oracle conv1d: the kernel is longer than the padded input");
    const int64_t cg = s.in_channels / p.groups, og = s.out_channels / p.groups;
    const int64_t x_channel = xv.channel_stride != 0 ? xv.channel_stride : s.length;
    std::vector<uint8_t> y(static_cast<size_t>(s.batch * s.out_channels * l_out) * size_of(out));
    dispatch(input, [&]<DType T>() {
        if constexpr (T == DType::f32 || T == DType::f16 || T == DType::bf16) {
            using S = Scalar<T>;
            using V = typename S::V;
            for (int64_t n = 0; n < s.batch; ++n)
                for (int64_t oc = 0; oc < s.out_channels; ++oc) {
                    const int64_t g = oc / og;
                    for (int64_t t = 0; t < l_out; ++t) {
                        float acc = 0.0f;
                        for (int64_t ic = 0; ic < cg; ++ic)
                            for (int64_t r = 0; r < s.kernel; ++r) {
                                const int64_t pos = t * p.stride - p.padding + r * p.dilation;
                                if (pos < 0 || pos >= s.length) continue;  // padding: skipped
                                const int64_t xi = xv.offset + n * xv.batch_stride +
                                                   (g * cg + ic) * x_channel + pos;
                                const int64_t wi = (oc * cg + ic) * s.kernel + r;
                                acc = std::fma(S::to_f32(load<V>(x, static_cast<size_t>(xi))),
                                               S::to_f32(load<V>(w, static_cast<size_t>(wi))), acc);
                            }
                        const size_t at =
                            static_cast<size_t>((n * s.out_channels + oc) * l_out + t);
                        if (out == DType::f32)
                            store<float>(y, at, acc);
                        else
                            store<V>(y, at, S::from_f32(acc));
                    }
                }
        }
    });
    return y;
}

}  // namespace kiln::oracle
