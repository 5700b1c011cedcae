// The matvec_kquant oracle: the blocks unpacked by oracle/quant_blocks.hpp, the integer sums and
// the f32 steps written out one by one (kiln builds with -ffp-contract=off).
#include "oracle/matvec_kquant.hpp"

#include <cstring>

#include "kiln/error.hpp"
#include "kiln/ops/matvec_q8.hpp"
#include "kiln/semantics.hpp"
#include "oracle/quant_blocks.hpp"
#include "oracle/test_kernels.hpp"

namespace kiln::oracle {

namespace {

using ops::KQuant;

// x block j of a super-block: its scale and quants.
struct XBlock {
    float d;
    int q[32];
};

XBlock x_block(const uint8_t* block) {
    XBlock b{};
    uint16_t h;
    std::memcpy(&h, block, 2);
    b.d = semantics::f16_to_f32(h);
    for (int i = 0; i < 32; ++i) b.q[i] = static_cast<int8_t>(block[2 + i]);
    return b;
}

float q4_k_part(const Q4KBlock& w, int j, const XBlock& x) {
    int32_t isum = 0, bsum = 0;
    for (int i = 0; i < 32; ++i) {
        isum += w.q[32 * j + i] * x.q[i];
        bsum += x.q[i];
    }
    const int32_t a = w.scale[j] * isum, b = w.min[j] * bsum;
    const float da = w.d * x.d, db = w.dmin * x.d;
    const float pa = da * static_cast<float>(a), pb = db * static_cast<float>(b);
    return pa - pb;
}

float q6_k_part(const Q6KBlock& w, int j, const XBlock& x) {
    int32_t a = 0;
    for (int s = 0; s < 2; ++s) {
        int32_t isum = 0;
        for (int i = 0; i < 16; ++i) isum += w.q[32 * j + 16 * s + i] * x.q[16 * s + i];
        a += w.scale[2 * j + s] * isum;
    }
    const float d = w.d * x.d;
    return d * static_cast<float>(a);
}

// acc + a super-block's pairs q_i = p_{2i} + p_{2i+1}, i = 0..3, in order.
float add_super_block(KQuant format, const uint8_t* w, const uint8_t* x, float acc) {
    float p[8];
    if (format == KQuant::q4_k) {
        const Q4KBlock b = unpack_q4_k(w);
        for (int j = 0; j < 8; ++j) p[j] = q4_k_part(b, j, x_block(x + j * ops::kQ8BlockBytes));
    } else {
        const Q6KBlock b = unpack_q6_k(w);
        for (int j = 0; j < 8; ++j) p[j] = q6_k_part(b, j, x_block(x + j * ops::kQ8BlockBytes));
    }
    for (int i = 0; i < 4; ++i) {
        const float q = p[2 * i] + p[2 * i + 1];
        acc = acc + q;
    }
    return acc;
}

}  // namespace

std::vector<float> matvec_kquant(KQuant format, const std::vector<uint8_t>& w,
                                 const std::vector<uint8_t>& x_q8, int64_t rows, int64_t k) {
    const int64_t unit = ops::kquant_unit_values(format);
    if (rows < 1 || k < unit || k % unit != 0)
        fail("oracle matvec_kquant: rows = {}, k = {}; expected k a multiple of {}", rows, k, unit);
    const int64_t w_block = format == KQuant::q4_k ? ops::kQ4KBlockBytes : ops::kQ6KBlockBytes;
    const int64_t x_block_bytes = 8 * ops::kQ8BlockBytes;  // x's bytes per super-block
    const int64_t supers = k / ops::kKquantBlockValues, per_unit = unit / ops::kKquantBlockValues;
    if (static_cast<int64_t>(w.size()) != rows * supers * w_block ||
        static_cast<int64_t>(x_q8.size()) != supers * x_block_bytes)
        fail("oracle matvec_kquant: {} and {} bytes for rows = {}, k = {}", w.size(), x_q8.size(),
             rows, k);
    std::vector<float> y(static_cast<size_t>(rows));
    std::vector<float> v(static_cast<size_t>(supers / per_unit));
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* wr = w.data() + r * supers * w_block;
        for (int64_t u = 0; u < supers / per_unit; ++u) {
            float value = 0.0f;
            for (int64_t s = u * per_unit; s < (u + 1) * per_unit; ++s)
                value = add_super_block(format, wr + s * w_block, x_q8.data() + s * x_block_bytes,
                                        value);
            v[static_cast<size_t>(u)] = value;
        }
        y[static_cast<size_t>(r)] = canonical_fold(v, ops::kMatvecKquantLanes, 1, 0.0f,
                                                   [](float a, float b) { return a + b; });
    }
    return y;
}

}  // namespace kiln::oracle
