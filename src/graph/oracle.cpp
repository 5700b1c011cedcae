// The graph oracle: each node evaluated from its inputs by the op's definition.
#include "graph/oracle.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "graph/fold_order.hpp"
#include "kiln/error.hpp"
#include "kiln/host_math.hpp"
#include "kiln/semantics.hpp"
#include "oracle/attention.hpp"
#include "oracle/contraction_sum.hpp"
#include "oracle/conv1d.hpp"

namespace kiln::graph {

namespace sem = kiln::semantics;

namespace {

// ---- scalars ------------------------------------------------------------------------------

float round_to(DType t, float v) {
    if (t == DType::f16) return sem::f16_to_f32(sem::f32_to_f16(v));
    if (t == DType::bf16) return sem::bf16_to_f32(sem::f32_to_bf16(v));
    return v;
}

// An integer wrapped to dtype t (bool: 0 or 1 as given).
int64_t wrap(DType t, int64_t v) {
    switch (t) {
        case DType::i8:
            return static_cast<int8_t>(static_cast<uint8_t>(v));
        case DType::u8:
            return static_cast<uint8_t>(v);
        case DType::i32:
            return static_cast<int32_t>(static_cast<uint32_t>(v));
        case DType::u32:
            return static_cast<uint32_t>(v);
        default:
            return v;
    }
}

int64_t wrapping(DType t, uint64_t v) {
    return wrap(t, static_cast<int64_t>(v));
}

int64_t f32_to_int(DType t, float x) {
    switch (t) {
        case DType::i8:
            return sem::kiln_f32_to_i8(x);
        case DType::u8:
            return sem::kiln_f32_to_u8(x);
        case DType::i32:
            return sem::kiln_f32_to_i32(x);
        case DType::u32:
            return sem::kiln_f32_to_u32(x);
        case DType::i64:
            return sem::kiln_f32_to_i64(x);
        default:
            return x != 0 ? 1 : 0;
    }
}

int64_t int_div(DType t, int64_t a, int64_t b) {
    switch (t) {
        case DType::i8:
            return sem::kiln_div_i8(int8_t(a), int8_t(b));
        case DType::u8:
            return sem::kiln_div_u8(uint8_t(a), uint8_t(b));
        case DType::i32:
            return sem::kiln_div_i32(int32_t(a), int32_t(b));
        case DType::u32:
            return sem::kiln_div_u32(uint32_t(a), uint32_t(b));
        default:
            return sem::kiln_div_i64(a, b);
    }
}

// A C++ number as a constant of dtype t (the DSL's constant(): through f32 for floats).
void constant_value(DType t, double v, float& f, int64_t& i) {
    if (is_float(t))
        f = round_to(t, static_cast<float>(v));
    else if (t == DType::boolean)
        i = v != 0;
    else
        i = wrap(t, static_cast<int64_t>(v));
}

// ---- tensors ------------------------------------------------------------------------------

HostTensor make(DType t, const Shape& s) {
    HostTensor h{t, s, {}, {}};
    const auto n = static_cast<size_t>(element_count(s));
    if (is_float(t))
        h.f.assign(n, 0);
    else
        h.i.assign(n, 0);
    return h;
}

HostTensor from_bytes(DType t, const Shape& s, const std::vector<uint8_t>& bytes) {
    HostTensor h = make(t, s);
    const size_t n = static_cast<size_t>(element_count(s));
    const uint8_t* p = bytes.data();
    for (size_t k = 0; k < n; ++k) {
        switch (t) {
            case DType::f32:
                std::memcpy(&h.f[k], p + 4 * k, 4);
                break;
            case DType::f16:
            case DType::bf16: {
                uint16_t b;
                std::memcpy(&b, p + 2 * k, 2);
                h.f[k] = t == DType::f16 ? sem::f16_to_f32(b) : sem::bf16_to_f32(b);
                break;
            }
            case DType::i8:
                h.i[k] = static_cast<int8_t>(p[k]);
                break;
            case DType::u8:
                h.i[k] = p[k];
                break;
            case DType::boolean:
                h.i[k] = p[k] != 0;
                break;
            case DType::i32: {
                int32_t v;
                std::memcpy(&v, p + 4 * k, 4);
                h.i[k] = v;
                break;
            }
            case DType::u32: {
                uint32_t v;
                std::memcpy(&v, p + 4 * k, 4);
                h.i[k] = v;
                break;
            }
            case DType::i64:
                std::memcpy(&h.i[k], p + 8 * k, 8);
                break;
        }
    }
    return h;
}

// Element access that does not care whether a tensor is float or integer.
struct Scalar {
    float f = 0;
    int64_t i = 0;
};
Scalar get(const HostTensor& t, int64_t k) {
    return is_float(t.dtype) ? Scalar{t.f[size_t(k)], 0} : Scalar{0, t.i[size_t(k)]};
}
void put(HostTensor& t, int64_t k, Scalar v) {
    if (is_float(t.dtype))
        t.f[size_t(k)] = v.f;
    else
        t.i[size_t(k)] = v.i;
}

// kiln's cast of one value from dtype `from` to dtype `to`.
Scalar cast_value(DType to, DType from, Scalar v) {
    Scalar r;
    if (to == DType::boolean) {
        r.i = is_float(from) ? (v.f != 0.0f) : (v.i != 0);
    } else if (from == DType::boolean) {
        if (is_float(to))
            r.f = round_to(to, v.i ? 1.0f : 0.0f);
        else
            r.i = v.i ? 1 : 0;
    } else if (is_float(from) && is_float(to)) {
        r.f = round_to(to, v.f);
    } else if (is_float(from)) {
        r.i = f32_to_int(to, v.f);
    } else if (is_float(to)) {
        r.f = round_to(to, static_cast<float>(v.i));
    } else {
        r.i = wrap(to, v.i);
    }
    return r;
}

// ---- maps ---------------------------------------------------------------------------------

float float_map(MapOp op, const float* a) {
    switch (op) {
        case MapOp::neg:
            return -a[0];
        case MapOp::abs:
            return std::bit_cast<float>(std::bit_cast<uint32_t>(a[0]) & 0x7fffffffu);
        case MapOp::exp:
            return host::exp(a[0]);
        case MapOp::log:
            return host::log(a[0]);
        case MapOp::sqrt:
            return std::sqrt(a[0]);
        case MapOp::rsqrt:
            return host::rsqrt(a[0]);
        case MapOp::sin:
            return host::sin(a[0]);
        case MapOp::cos:
            return host::cos(a[0]);
        case MapOp::tanh:
            return host::tanh(a[0]);
        case MapOp::erf:
            return host::erf(a[0]);
        case MapOp::sigmoid:
            return host::sigmoid(a[0]);
        case MapOp::relu:
            return sem::kiln_max_f32(a[0], 0.0f);
        case MapOp::gelu_erf:
            return (a[0] * 0.5f) *
                   (1.0f + host::erf(a[0] * static_cast<float>(0.70710678118654752)));
        case MapOp::gelu_tanh: {
            const float cube = a[0] * a[0] * a[0];
            const float inner = static_cast<float>(0.79788456080286536) * (a[0] + 0.044715f * cube);
            return (a[0] * 0.5f) * (1.0f + host::tanh(inner));
        }
        case MapOp::silu:
            return a[0] * host::sigmoid(a[0]);
        case MapOp::square:
            return a[0] * a[0];
        case MapOp::recip:
            return 1.0f / a[0];
        case MapOp::floor:
            return host::floor(a[0]);
        case MapOp::ceil:
            return host::ceil(a[0]);
        case MapOp::round:
            return host::round(a[0]);
        case MapOp::add:
            return a[0] + a[1];
        case MapOp::sub:
            return a[0] - a[1];
        case MapOp::mul:
            return a[0] * a[1];
        case MapOp::div:
            return a[0] / a[1];
        case MapOp::pow:
            return host::pow(a[0], a[1]);
        case MapOp::minimum:
            return sem::kiln_min_f32(a[0], a[1]);
        case MapOp::maximum:
            return sem::kiln_max_f32(a[0], a[1]);
        default:
            break;
    }
    fail("oracle: map {} is not a float op", name(op));
}

int64_t integer_map(MapOp op, DType t, const int64_t* a) {
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    switch (op) {
        case MapOp::neg:
            return wrapping(t, 0 - u(a[0]));
        case MapOp::abs:
            return a[0] < 0 ? wrapping(t, 0 - u(a[0])) : a[0];
        case MapOp::relu:
            return a[0] > 0 ? a[0] : 0;
        case MapOp::square:
            return wrapping(t, u(a[0]) * u(a[0]));
        case MapOp::add:
            return wrapping(t, u(a[0]) + u(a[1]));
        case MapOp::sub:
            return wrapping(t, u(a[0]) - u(a[1]));
        case MapOp::mul:
            return wrapping(t, u(a[0]) * u(a[1]));
        case MapOp::div:
            return int_div(t, a[0], a[1]);
        case MapOp::minimum:
            return a[0] < a[1] ? a[0] : a[1];
        case MapOp::maximum:
            return a[0] > a[1] ? a[0] : a[1];
        default:
            break;
    }
    fail("oracle: map {} is not an integer op", name(op));
}

template <typename V>
bool compare_values(MapOp op, V a, V b) {
    switch (op) {
        case MapOp::eq:
            return a == b;
        case MapOp::ne:
            return a != b;
        case MapOp::lt:
            return a < b;
        case MapOp::le:
            return a <= b;
        case MapOp::gt:
            return a > b;
        default:
            return a >= b;
    }
}

Scalar compare(MapOp op, DType t, Scalar a, Scalar b) {
    const bool r = is_float(t) ? compare_values(op, a.f, b.f) : compare_values(op, a.i, b.i);
    return Scalar{0, r ? 1 : 0};
}

Scalar map_value(MapOp op, DType out, const std::vector<DType>& in, const std::vector<Scalar>& a) {
    switch (op) {
        case MapOp::cast:
            return cast_value(out, in[0], a[0]);
        case MapOp::where:
            return a[0].i ? a[1] : a[2];
        case MapOp::logical_not:
            return {0, a[0].i ? 0 : 1};
        case MapOp::logical_and:
            return {0, (a[0].i && a[1].i) ? 1 : 0};
        case MapOp::logical_or:
            return {0, (a[0].i || a[1].i) ? 1 : 0};
        case MapOp::isnan:
            return {0, a[0].f != a[0].f ? 1 : 0};
        default:
            break;
    }
    if (is_comparison(op)) return compare(op, in[0], a[0], a[1]);
    if (is_float(out)) {
        float args[3];
        for (size_t k = 0; k < a.size(); ++k) args[k] = a[k].f;
        return {round_to(out, float_map(op, args)), 0};
    }
    int64_t args[3];
    for (size_t k = 0; k < a.size(); ++k) args[k] = a[k].i;
    return {0, integer_map(op, out, args)};
}

// ---- generators ---------------------------------------------------------------------------

uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
uint32_t stream(uint32_t key, int64_t k) {
    const auto lo = static_cast<uint32_t>(k),
               hi = static_cast<uint32_t>(static_cast<uint64_t>(k) >> 32);
    return mix32(lo ^ mix32(hi ^ key));
}
float unit(uint32_t h) {
    return static_cast<float>(h >> 8) * 0x1p-24f;
}

Scalar generated(const op::Generate& g, DType t, int64_t k) {
    const uint32_t key = mix32(static_cast<uint32_t>(g.seed) ^
                               mix32(static_cast<uint32_t>(g.seed >> 32) ^ 0x9e3779b9u));
    switch (g.kind) {
        case op::GenerateKind::arange:
            if (is_float(t))
                return {round_to(t, static_cast<float>(g.start) +
                                        static_cast<float>(k) * static_cast<float>(g.step)),
                        0};
            return {0, wrapping(t, static_cast<uint64_t>(wrap(t, k)) *
                                           static_cast<uint64_t>(static_cast<int64_t>(g.step)) +
                                       static_cast<uint64_t>(static_cast<int64_t>(g.start)))};
        case op::GenerateKind::rand:
            return {round_to(t, unit(stream(key, k))), 0};
        case op::GenerateKind::randn: {
            const uint32_t h1 = stream(key, k), h2 = stream(mix32(key ^ 0x85ebca6bu), k);
            const float u1 = static_cast<float>((h1 >> 8) + 1u) * 0x1p-24f;
            const float r = std::sqrt(-2.0f * host::log(u1));
            return {round_to(t, r * host::cos(static_cast<float>(6.2831853071795865) * unit(h2))),
                    0};
        }
    }
    return {};
}

// ---- folds --------------------------------------------------------------------------------

Scalar fold_identity(FoldKind k, DType t) {
    const float inf = INFINITY;
    switch (k) {
        case FoldKind::sum:
            return {0.0f, 0};
        case FoldKind::prod:
            return {1.0f, 1};
        case FoldKind::max:
        case FoldKind::min: {
            const bool lowest = k == FoldKind::max;
            if (is_float(t)) return {lowest ? -inf : inf, 0};
            switch (t) {
                case DType::i8:
                    return {0, lowest ? -128 : 127};
                case DType::u8:
                    return {0, lowest ? 0 : 255};
                case DType::i32:
                    return {0, lowest ? INT32_MIN : INT32_MAX};
                case DType::u32:
                    return {0, lowest ? 0 : int64_t{UINT32_MAX}};
                default:
                    return {0, lowest ? INT64_MIN : INT64_MAX};
            }
        }
    }
    return {};
}

Scalar combine(FoldKind k, DType t, Scalar a, Scalar b) {
    if (is_float(t)) {
        float r = 0;
        switch (k) {
            case FoldKind::sum:
                r = a.f + b.f;
                break;
            case FoldKind::prod:
                r = a.f * b.f;
                break;
            case FoldKind::max:
                r = sem::kiln_max_f32(a.f, b.f);
                break;
            case FoldKind::min:
                r = sem::kiln_min_f32(a.f, b.f);
                break;
        }
        return {round_to(t, r), 0};
    }
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    switch (k) {
        case FoldKind::sum:
            return {0, wrapping(t, u(a.i) + u(b.i))};
        case FoldKind::prod:
            return {0, wrapping(t, u(a.i) * u(b.i))};
        case FoldKind::max:
            return {0, a.i > b.i ? a.i : b.i};
        case FoldKind::min:
            return {0, a.i < b.i ? a.i : b.i};
    }
    return {};
}

// The one-level order over n values given by value(i), with W lanes.
Scalar level_fold(FoldKind k, DType t, int64_t n, int W,
                  const std::function<Scalar(int64_t)>& value) {
    std::vector<Scalar> lanes(static_cast<size_t>(W), fold_identity(k, t));
    for (int64_t i = 0; i < n; ++i) {
        Scalar& lane = lanes[static_cast<size_t>(i % W)];
        lane = combine(k, t, lane, value(i));
    }
    for (int s = W / 2; s >= 1; s /= 2)
        for (int j = 0; j < s; ++j)
            lanes[size_t(j)] = combine(k, t, lanes[size_t(j)], lanes[size_t(j + s)]);
    return lanes[0];
}

// The canonical fold of `n` values given by value(i) (graph/fold_order.hpp).
Scalar canonical_fold(FoldKind k, DType t, int64_t n, const std::function<Scalar(int64_t)>& value) {
    if (!segmented(n)) return level_fold(k, t, n, level_lanes(n), value);
    return canonical_fold(k, t, segment_count(n), [&](int64_t s) {
        const int64_t first = s * kSegment;
        return level_fold(k, t, std::min(kSegment, n - first), kSegmentLanes,
                          [&](int64_t i) { return value(first + i); });
    });
}

// ---- nodes --------------------------------------------------------------------------------

class Evaluator {
  public:
    const HostTensor& value(const NodeRef& n) {
        if (auto it = done_.find(n.get()); it != done_.end()) return it->second;
        HostTensor t = compute(*n);
        return done_.emplace(n.get(), std::move(t)).first->second;
    }

  private:
    HostTensor compute(const Node& n) {
        if (n.resolved())
            return from_bytes(
                n.dtype, n.shape,
                n.buffer->count() ? n.buffer->download_bytes() : std::vector<uint8_t>{});
        HostTensor out = make(n.dtype, n.shape);
        const int64_t count = n.numel();
        if (const auto* c = n.as<op::Constant>()) {
            Scalar v;
            constant_value(n.dtype, c->value, v.f, v.i);
            for (int64_t k = 0; k < count; ++k) put(out, k, v);
        } else if (const auto* g = n.as<op::Generate>()) {
            for (int64_t k = 0; k < count; ++k) put(out, k, generated(*g, n.dtype, k));
        } else if (const auto* m = n.as<op::Map>()) {
            std::vector<const HostTensor*> in;
            std::vector<DType> types;
            for (const auto& i : n.inputs) {
                in.push_back(&value(i));
                types.push_back(i->dtype);
            }
            std::vector<Scalar> args(in.size());
            for (int64_t k = 0; k < count; ++k) {
                for (size_t a = 0; a < in.size(); ++a) args[a] = get(*in[a], k);
                put(out, k, map_value(m->op, n.dtype, types, args));
            }
        } else if (const auto* f = n.as<op::Fold>()) {
            fold(n, *f, out);
        } else if (const auto* v = n.as<op::View>()) {
            view(n, *v, out);
        } else if (const auto* c = n.as<op::Concat>()) {
            concat(n, *c, out);
        } else if (const auto* g = n.as<op::Gather>()) {
            gather(n, *g, out);
        } else if (const auto* s = n.as<op::ScatterAdd>()) {
            scatter_add(n, *s, out);
        } else if (n.as<op::Matmul>()) {
            matmul(n, out);
        } else if (const auto* c = n.as<op::Conv1d>()) {
            out = conv1d(n, *c);
        } else if (const auto* a = n.as<op::Attention>()) {
            out = attention(n, *a);
        }
        return out;
    }

    // Each output: the fma chains over k's chunks in order, their sums added in order
    // (oracle::contraction_sum), rounded once.
    void matmul(const Node& n, HostTensor& out) {
        const HostTensor& a = value(n.inputs[0]);
        const HostTensor& b = value(n.inputs[1]);
        const size_t r = n.shape.size();
        const int64_t m = n.shape[r - 2], cols = n.shape[r - 1], k = a.shape[r - 1];
        const int64_t batches = m * cols == 0 ? 0 : n.numel() / (m * cols);
        for (int64_t bt = 0; bt < batches; ++bt)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < cols; ++j) {
                    const float acc = oracle::contraction_sum(k, [&](int64_t p, float s) {
                        return std::fma(a.f[size_t((bt * m + i) * k + p)],
                                        b.f[size_t((bt * k + p) * cols + j)], s);
                    });
                    out.f[size_t((bt * m + i) * cols + j)] = round_to(n.dtype, acc);
                }
    }

    // kiln/ops/conv1d.hpp's definition (oracle::conv1d), x and w dense.
    HostTensor conv1d(const Node& n, const op::Conv1d& c) {
        const HostTensor& x = value(n.inputs[0]);
        const HostTensor& w = value(n.inputs[1]);
        const ops::Conv1dShape shape{x.shape[0], x.shape[1],
                                     x.shape[2], w.shape[0],
                                     w.shape[2], {c.stride, c.padding, c.dilation, c.groups}};
        return from_bytes(
            n.dtype, n.shape,
            oracle::conv1d(x.dtype, n.dtype, x.bytes(),
                           {0, shape.in_channels * shape.length, shape.length}, w.bytes(), shape));
    }

    // kiln/ops/attention.hpp's definition (oracle::attention), q, k and v dense; a key length
    // out of range is the devices' error.
    HostTensor attention(const Node& n, const op::Attention& a) {
        const HostTensor& q = value(n.inputs[0]);
        const HostTensor& k = value(n.inputs[1]);
        const HostTensor& v = value(n.inputs[2]);
        const ops::AttentionShape shape{q.shape[0], q.shape[1], k.shape[1],
                                        q.shape[2], k.shape[2], q.shape[3]};
        std::vector<int64_t> key_lengths;
        if (n.inputs.size() > 3) {
            key_lengths = value(n.inputs[3]).i;
            for (size_t b = 0; b < key_lengths.size(); ++b)
                if (key_lengths[b] < 1 || key_lengths[b] > shape.seq_k)
                    ops::attention_key_length_error(key_lengths[b], int64_t(b), shape.seq_k);
        }
        return from_bytes(
            n.dtype, n.shape,
            oracle::attention(q.dtype, n.dtype, q.bytes(), k.bytes(), v.bytes(), shape, a.causal,
                              a.scale, ops::kAttentionKeyBlock, key_lengths));
    }

    void fold(const Node& n, const op::Fold& f, HostTensor& out) {
        const HostTensor& x = value(n.inputs[0]);
        Shape inner;
        for (int a : f.axes) inner.push_back(x.shape[size_t(a)]);
        const int64_t len = element_count(inner);
        for (int64_t r = 0; r < n.numel(); ++r) {
            const auto oc = unravel(r, n.shape);
            put(out, r, canonical_fold(f.kind, n.dtype, len, [&](int64_t i) {
                    const auto ic = unravel(i, inner);
                    std::vector<int64_t> c;
                    size_t o = 0, q = 0;
                    for (size_t a = 0; a < x.shape.size(); ++a) {
                        const bool reduced =
                            std::find(f.axes.begin(), f.axes.end(), int(a)) != f.axes.end();
                        c.push_back(reduced ? ic[q++] : oc[o++]);
                    }
                    return get(x, ravel(c, x.shape));
                }));
        }
    }

    void view(const Node& n, const op::View& v, HostTensor& out) {
        const HostTensor& x = value(n.inputs[0]);
        for (int64_t k = 0; k < n.numel(); ++k) {
            const auto c = unravel(k, n.shape);
            std::vector<int64_t> in(x.shape.size(), 0);
            bool inside = true;
            switch (v.kind) {
                case ViewKind::reshape:
                    put(out, k, get(x, k));
                    continue;
                case ViewKind::permute:
                    for (size_t i = 0; i < c.size(); ++i) in[size_t(v.a[i])] = c[i];
                    break;
                case ViewKind::expand: {
                    const size_t off = c.size() - x.shape.size();
                    for (size_t j = 0; j < in.size(); ++j) in[j] = x.shape[j] == 1 ? 0 : c[j + off];
                    break;
                }
                case ViewKind::slice:
                    for (size_t j = 0; j < in.size(); ++j) in[j] = v.a[j] + c[j] * v.b[j];
                    break;
                case ViewKind::pad:
                    for (size_t j = 0; j < in.size(); ++j) {
                        in[j] = c[j] - v.a[j];
                        inside = inside && in[j] >= 0 && in[j] < x.shape[j];
                    }
                    break;
            }
            if (inside) {
                put(out, k, get(x, ravel(in, x.shape)));
            } else {
                Scalar p;
                constant_value(n.dtype, v.pad_value, p.f, p.i);
                put(out, k, p);
            }
        }
    }

    void concat(const Node& n, const op::Concat& c, HostTensor& out) {
        const auto axis = static_cast<size_t>(c.axis);
        for (int64_t k = 0; k < n.numel(); ++k) {
            auto coords = unravel(k, n.shape);
            for (const auto& part : n.inputs) {
                if (coords[axis] < part->shape[axis]) {
                    put(out, k, get(value(part), ravel(coords, part->shape)));
                    break;
                }
                coords[axis] -= part->shape[axis];
            }
        }
    }

    [[noreturn]] void bad_index(const char* op, int64_t at, int64_t index, int axis,
                                int64_t extent) {
        fail("{}: index {} at position {} of the index is out of range for axis {} of {} elements",
             op, index, at, axis, extent);
    }

    void gather(const Node& n, const op::Gather& g, HostTensor& out) {
        const HostTensor& x = value(n.inputs[0]);
        const HostTensor& idx = value(n.inputs[1]);
        const auto axis = static_cast<size_t>(g.axis);
        for (int64_t k = 0; k < n.numel(); ++k) {
            auto c = unravel(k, n.shape);
            const int64_t at = g.select ? c[axis] : k;
            const int64_t i = idx.i[size_t(at)];
            if (i < 0 || i >= x.shape[axis])
                bad_index(g.select ? "index_select" : "gather", at, i, g.axis, x.shape[axis]);
            c[axis] = i;
            put(out, k, get(x, ravel(c, x.shape)));
        }
    }

    void scatter_add(const Node& n, const op::ScatterAdd& s, HostTensor& out) {
        out = value(n.inputs[0]);
        const HostTensor& idx = value(n.inputs[1]);
        const HostTensor& src = value(n.inputs[2]);
        const auto axis = static_cast<size_t>(s.axis);
        const int64_t total = element_count(src.shape);
        for (int64_t k = 0; k < total; ++k) {
            auto c = unravel(k, src.shape);
            const int64_t i = idx.i[size_t(k)];
            if (i < 0 || i >= n.shape[axis]) bad_index("scatter_add", k, i, s.axis, n.shape[axis]);
            c[axis] = i;
            const int64_t d = ravel(c, n.shape);
            put(out, d,
                map_value(MapOp::add, n.dtype, {n.dtype, n.dtype}, {get(out, d), get(src, k)}));
        }
    }

    std::unordered_map<const Node*, HostTensor> done_;
};

}  // namespace

std::vector<uint8_t> HostTensor::bytes() const {
    const size_t n = static_cast<size_t>(element_count(shape));
    const size_t w = size_of(dtype);
    std::vector<uint8_t> out(n * w);
    for (size_t k = 0; k < n; ++k) {
        uint8_t* p = out.data() + k * w;
        switch (dtype) {
            case DType::f32:
                std::memcpy(p, &f[k], 4);
                break;
            case DType::f16:
            case DType::bf16: {
                const uint16_t b =
                    dtype == DType::f16 ? sem::f32_to_f16(f[k]) : sem::f32_to_bf16(f[k]);
                std::memcpy(p, &b, 2);
                break;
            }
            case DType::i8:
            case DType::u8:
            case DType::boolean:
                *p = static_cast<uint8_t>(i[k]);
                break;
            case DType::i32:
            case DType::u32: {
                const auto v = static_cast<uint32_t>(i[k]);
                std::memcpy(p, &v, 4);
                break;
            }
            case DType::i64:
                std::memcpy(p, &i[k], 8);
                break;
        }
    }
    return out;
}

std::vector<HostTensor> evaluate(const std::vector<NodeRef>& outputs) {
    Evaluator e;
    std::vector<HostTensor> out;
    for (const auto& o : outputs) out.push_back(e.value(o));
    return out;
}

}  // namespace kiln::graph
