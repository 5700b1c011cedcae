// The tensor graph: what a lazy kiln::Tensor points at.
//
// A Node is an immutable value of a fixed shape and dtype, computed from its inputs by one op.
// Semantics every plan (fused or not, any schedule, any device) reproduces bit for bit:
//   - Map: elementwise over inputs of the node's own shape (broadcasting is an explicit Expand
//     view the op builders insert). A float op computes in f32 from its widened inputs and rounds
//     its result to the node's dtype once (so f16/bf16 round after every op and fusion never
//     changes bits); integer arithmetic wraps; comparisons give bool. docs/graph.md lists every op.
//   - Fold: a reduction over `axes` of its input. The reduced elements, taken in row-major order of
//     the reduced axes, form a sequence of length n folded in the canonical order of
//     canonical_fold(n): lanes W(n), chunk 1, then the halving tree. f16/bf16 inputs accumulate in
//     f32; the result is rounded once.
//   - View: an index map (reshape, permute, expand, slice, pad); never a copy.
//   - Concat: the inputs laid end to end along one axis.
//   - Gather: picks elements of its source along an axis by an integer index tensor.
//   - ScatterAdd: a copy of its base with source elements added at indexed positions, in
//     increasing order of the source position for each destination element.
//   - Matmul: C[..., i, j] = sum over p of A[..., i, p] * B[..., p, j] for inputs A [..., m, k]
//     and B [..., k, n] of one float dtype and one batch shape (the builder expands them): in
//     f32 from the widened inputs, acc = fma(a, b, acc) from +0 for p = 0, 1, ..., k-1 in order,
//     rounded once to the node's dtype (kiln/ops/matmul.hpp's exact class). With the tensor-core
//     class (f16/bf16 inputs, the caller's choice) a CUDA device with tensor cores computes it
//     by mma steps instead, within ops::kTensorCoreBound of that; other devices as above.
//   - Conv1d: y [n, c_out, l_out] from x [n, c_in, length] and w [c_out, c_in/groups, kernel]
//     (torch's conv1d without bias) with stride, padding, dilation and groups:
//     kiln/ops/conv1d.hpp's exact class, acc = fma(x, w, acc) from +0 over (channel, tap) in
//     order, taps in the padding skipped, rounded once to the node's dtype.
//   - Attention: o [b, heads, seq_q, d] = softmax(q·kᵀ·scale (+ causal mask))·v from q [b, heads,
//     seq_q, d] and k, v [b, kv_heads, seq_k, d]: kiln/ops/attention.hpp's exact class (online
//     softmax over key blocks of a size the op fixes), rounded once to the node's dtype.
//   - Leaf: data on a device (from the host, or a node already resolved).
//   - Constant / Generate: values computed from the element's coordinates alone (full, arange,
//     seeded rand/randn: the same bits on every device).
// Nodes are shared by pointer. A node that has been resolved keeps its buffer and is a Leaf to
// every later graph; its inputs are dropped so upstream memory can be freed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "graph/map_op_table.hpp"
#include "graph/shape.hpp"
#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/matmul_class.hpp"

namespace kiln::graph {

struct Node;
using NodeRef = std::shared_ptr<Node>;

enum class FoldKind : uint8_t { sum, prod, max, min };
const char* name(FoldKind k);

enum class ViewKind : uint8_t { reshape, permute, expand, slice, pad };
const char* name(ViewKind k);

namespace op {
struct Leaf {};
struct Constant {
    double value = 0;  // converted to the node's dtype by kiln's cast rules
};
enum class GenerateKind : uint8_t { arange, rand, randn };
struct Generate {
    GenerateKind kind;
    double start = 0, step = 1;  // arange: start + step * linear index
    uint64_t seed = 0;           // rand, randn
};
struct Map {
    MapOp op;
};
struct Fold {
    FoldKind kind;
    std::vector<int> axes;  // sorted, unique
};
struct View {
    ViewKind kind;
    std::vector<int64_t> a;  // reshape/expand: the new shape; permute: the order; slice: per axis
                             // start; pad: per axis elements before
    std::vector<int64_t> b;  // slice: per axis step; pad: per axis elements after
    double pad_value = 0;
};
struct Concat {
    int axis;
};
struct Gather {
    int axis;  // out[.., i, ..] = src[.., index[.., i, ..], ..] (torch.gather) ...
    bool select =
        false;  // ... or index_select: index is 1-D, out[.., i, ..] = src[.., index[i], ..]
};
struct ScatterAdd {
    int axis;  // out = base; out[.., index[.., i, ..], ..] += src[.., i, ..]
};
struct Matmul {
    MatmulClass arithmetic = MatmulClass::exact;  // the caller's class (kiln/matmul_class.hpp)
};
struct Conv1d {
    int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
    MatmulClass arithmetic = MatmulClass::exact;  // the caller's class (kiln/ops/conv1d.hpp)
};
struct Attention {
    bool causal = false;
    float scale = 1.0f;  // resolved by the builder (1/sqrt(d) unless given)
    MatmulClass arithmetic = MatmulClass::exact;  // the caller's class (kiln/ops/attention.hpp)
};
}  // namespace op

using Payload =
    std::variant<op::Leaf, op::Constant, op::Generate, op::Map, op::Fold, op::View, op::Concat,
                 op::Gather, op::ScatterAdd, op::Matmul, op::Conv1d, op::Attention>;

struct Node {
    Payload payload;
    DType dtype;
    Shape shape;
    std::vector<NodeRef> inputs;
    Device* device = nullptr;
    // Leaves and resolved nodes: the data, contiguous in row-major order.
    std::shared_ptr<Buffer> buffer;
    // The composite op this node belongs to ("softmax"), for names in profiles; may be empty.
    std::string label;

    bool resolved() const { return buffer != nullptr; }
    template <typename T>
    const T* as() const {
        return std::get_if<T>(&payload);
    }
    int64_t numel() const { return element_count(shape); }
};

// One-line description of a node's op, for errors and printing ("map add", "fold sum [1]").
std::string describe(const Node& n);

// Node makers: they check nothing; the op builders in tensor.cpp check and name the op.
NodeRef make_node(Payload payload, DType dtype, Shape shape, std::vector<NodeRef> inputs,
                  Device* device);

}  // namespace kiln::graph
