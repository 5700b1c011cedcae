// References of the conformance kernels, written with Scalar<T> so every rounding and wrap is
// kiln's.
#include "oracle/test_kernels.hpp"

#include <cmath>
#include <limits>

#include "ops/test_kernels.hpp"
#include "oracle/scalar.hpp"

namespace kiln::oracle {

void elementwise_mix(DType type, const Bytes& a, const Bytes& b, Bytes& y) {
    const size_t n = y.size() / size_of(type);
    if (type == DType::boolean) {
        for (size_t i = 0; i < n; ++i) {
            const bool x = a[i] != 0, z = b[i] != 0;
            y[i] = ((x && !z) || ((x != z) & (x == z))) ? 1 : 0;
        }
        return;
    }
    dispatch(type, [&]<DType T>() {
        using S = Scalar<T>;
        using V = typename S::V;
        for (size_t i = 0; i < n; ++i) {
            const V x = load<V>(a, i), z = load<V>(b, i);
            V r;
            if constexpr (S::is_float) {
                const V one = S::constant(1);
                r = S::add(S::sub(S::div(S::fma(x, z, x), S::add(S::mul(z, z), one)), S::min(x, z)),
                           S::sqrt(S::abs(S::max(x, z))));
            } else {
                V t = S::add(S::sub(S::add(S::mul(x, z), x), S::div(x, z)), S::rem(x, z));
                t = static_cast<V>(t ^ S::shl(x, static_cast<V>(z & 7)));
                t = static_cast<V>(t | S::shr(S::min(x, z), 3));
                r = S::add(t, S::sub(S::max(x, z), S::neg(x)));
            }
            store<V>(y, i, r);
        }
    });
}

namespace {

// The value of element i of x as f32 (floats), as int64 (integers), or as bool.
float as_f32(DType t, const Bytes& x, size_t i) {
    switch (t) {
        case DType::f32:
            return load<float>(x, i);
        case DType::f16:
            return semantics::f16_to_f32(load<uint16_t>(x, i));
        default:
            return semantics::bf16_to_f32(load<uint16_t>(x, i));
    }
}
int64_t as_int(DType t, const Bytes& x, size_t i) {
    switch (t) {
        case DType::i8:
            return load<int8_t>(x, i);
        case DType::u8:
        case DType::boolean:
            return load<uint8_t>(x, i);
        case DType::i32:
            return load<int32_t>(x, i);
        case DType::u32:
            return load<uint32_t>(x, i);
        default:
            return load<int64_t>(x, i);
    }
}
void put_int(DType t, Bytes& y, size_t i, int64_t v) {  // wraps like a C conversion
    switch (t) {
        case DType::i8:
            store<int8_t>(y, i, static_cast<int8_t>(v));
            break;
        case DType::u8:
            store<uint8_t>(y, i, static_cast<uint8_t>(v));
            break;
        case DType::boolean:
            store<uint8_t>(y, i, v != 0 ? 1 : 0);
            break;
        case DType::i32:
            store<int32_t>(y, i, static_cast<int32_t>(v));
            break;
        case DType::u32:
            store<uint32_t>(y, i, static_cast<uint32_t>(v));
            break;
        default:
            store<int64_t>(y, i, v);
            break;
    }
}
void put_f32(DType t, Bytes& y, size_t i, float f) {
    switch (t) {
        case DType::f32:
            store<float>(y, i, f);
            break;
        case DType::f16:
            store<uint16_t>(y, i, semantics::f32_to_f16(f));
            break;
        default:
            store<uint16_t>(y, i, semantics::f32_to_bf16(f));
            break;
    }
}
int64_t float_to_int(DType to, float f) {
    switch (to) {
        case DType::i8:
            return semantics::kiln_f32_to_i8(f);
        case DType::u8:
            return semantics::kiln_f32_to_u8(f);
        case DType::i32:
            return semantics::kiln_f32_to_i32(f);
        case DType::u32:
            return semantics::kiln_f32_to_u32(f);
        default:
            return semantics::kiln_f32_to_i64(f);
    }
}

}  // namespace

void cast(DType from, DType to, const Bytes& x, Bytes& y) {
    const size_t n = y.size() / size_of(to);
    for (size_t i = 0; i < n; ++i) {
        if (is_float(from)) {
            const float f = as_f32(from, x, i);
            if (to == DType::boolean)
                put_int(to, y, i, f != 0.0f);
            else if (is_float(to))
                put_f32(to, y, i, f);
            else
                put_int(to, y, i, float_to_int(to, f));
        } else {
            const int64_t v = as_int(from, x, i);
            if (to == DType::boolean)
                put_int(to, y, i, v != 0);
            else if (is_float(to)) {
                // integer -> f32 rounds to nearest even (C conversion), then to f16/bf16
                const float f = from == DType::u32 ? static_cast<float>(static_cast<uint32_t>(v))
                                                   : static_cast<float>(v);
                put_f32(to, y, i, f);
            } else {
                put_int(to, y, i, v);
            }
        }
    }
}

void row_fold(DType type, int64_t n, const ir::FoldSpec& fold, const Bytes& x, Bytes& out) {
    dispatch(type, [&]<DType T>() {
        using S = Scalar<T>;
        using V = typename S::V;
        const size_t rows = out.size() / sizeof(V);
        V identity;
        if (fold.op == ir::FoldOp::sum || fold.op == ir::FoldOp::prod)
            identity = S::constant(fold.op == ir::FoldOp::sum ? 0 : 1);
        else if constexpr (S::is_float)
            identity =
                S::constant(fold.op == ir::FoldOp::max ? -std::numeric_limits<double>::infinity()
                                                       : std::numeric_limits<double>::infinity());
        else
            identity = fold.op == ir::FoldOp::max ? std::numeric_limits<V>::lowest()
                                                  : std::numeric_limits<V>::max();
        for (size_t r = 0; r < rows; ++r) {
            std::vector<V> values(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
                const V v = load<V>(x, r * static_cast<size_t>(n) + static_cast<size_t>(i));
                values[static_cast<size_t>(i)] = fold.op == ir::FoldOp::sum ? S::mul(v, v) : v;
            }
            auto op = [&](V a, V b) {
                return fold.op == ir::FoldOp::sum    ? S::add(a, b)
                       : fold.op == ir::FoldOp::prod ? S::mul(a, b)
                       : fold.op == ir::FoldOp::max  ? S::max(a, b)
                                                     : S::min(a, b);
            };
            store<V>(out, r, canonical_fold(values, fold.lanes, fold.chunk, identity, op));
        }
    });
}

void matmul(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
            const std::vector<float>& b, std::vector<float>& c) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; ++p)
                acc = std::fma(a[static_cast<size_t>(i * k + p)], b[static_cast<size_t>(p * n + j)],
                               acc);
            c[static_cast<size_t>(i * n + j)] = acc;
        }
}

void comptime_poly(int degree, const std::vector<float>& x, std::vector<float>& y) {
    for (size_t i = 0; i < x.size(); ++i) {
        float acc = static_cast<float>(ops::comptime_poly_coefficient(degree));
        for (int c = degree - 1; c >= 0; --c)
            acc = std::fma(acc, x[i], static_cast<float>(ops::comptime_poly_coefficient(c)));
        y[i] = acc;
    }
}

void block_reverse(DType type, int block, const Bytes& x, Bytes& y) {
    const size_t w = size_of(type), n = x.size() / w, b = static_cast<size_t>(block);
    for (size_t base = 0; base < n; base += b) {
        const size_t valid = std::min(b, n - base);
        for (size_t t = 0; t < valid; ++t)
            std::copy_n(x.begin() + static_cast<std::ptrdiff_t>((base + valid - 1 - t) * w), w,
                        y.begin() + static_cast<std::ptrdiff_t>((base + t) * w));
    }
}

}  // namespace kiln::oracle
