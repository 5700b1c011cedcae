// kiln::Tensor: lazy tensors on a device. Ops build a graph; resolve() (or reading the data)
// plans it into few fused kernels of kiln's DSL, picks each launch's schedule with a cost model
// and the tuner, runs them, and remembers the plan so the next resolve of the same graph replays
// it in microseconds.
//
//   Device& d = kiln::best_device();
//   Tensor x = Tensor::randn({4096, 4096}, /*seed=*/1, DType::f32, d);
//   Tensor y = kiln::softmax(x * 2.0f, -1);
//   std::vector<float> host = y.to_host<float>();
//
// Every result is bit-identical to the graph evaluated op by op in plain C++ (docs/graph.md
// states each op's arithmetic), whatever the fusion, schedule or device. Bad input (shapes that
// do not broadcast, a bad axis, mismatched dtypes or devices, an element count that overflows)
// is a kiln::Error naming the op and the shapes, raised when the op is built.
// A graph is not safe to use from several threads at once; separate graphs are.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/matmul_class.hpp"

namespace kiln {

namespace graph {
struct Node;
}

using Shape = std::vector<int64_t>;

class Tensor {
  public:
    // An empty handle; every use but assignment is a kiln::Error.
    Tensor() = default;
    explicit Tensor(std::shared_ptr<graph::Node> node);

    // Host data (row-major, shape's element count of them), copied to the device now.
    template <typename T>
    static Tensor from_host(std::span<const T> data, const Shape& shape,
                            Device& device = cpu_device()) {
        return from_bytes(data.data(), data.size(), dtype_of<T>::value, shape, device);
    }
    template <typename T>
    static Tensor from_host(const std::vector<T>& data, const Shape& shape,
                            Device& device = cpu_device()) {
        return from_host(std::span<const T>(data), shape, device);
    }
    // `count` elements of `dtype` at `data`.
    static Tensor from_bytes(const void* data, size_t count, DType dtype, const Shape& shape,
                             Device& device = cpu_device());
    // A buffer's elements seen as a tensor (no copy); the tensor shares the buffer.
    static Tensor from_buffer(std::shared_ptr<Buffer> buffer, const Shape& shape);

    static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device& d = cpu_device());
    static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device& d = cpu_device());
    static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                       Device& d = cpu_device());
    // start, start + step, ... below stop (as torch.arange).
    static Tensor arange(double start, double stop, double step = 1, DType dtype = DType::f32,
                         Device& d = cpu_device());
    static Tensor arange(int64_t n, DType dtype = DType::i32, Device& d = cpu_device());
    // `steps` values from start to stop inclusive, evenly spaced (torch.linspace): with
    // step = f32((stop - start) / (steps - 1)), element i is start + i * step for i < steps / 2
    // and stop - (steps - 1 - i) * step after (each in f32, rounded to dtype once), so both ends
    // are exact. Float dtypes only.
    static Tensor linspace(double start, double stop, int64_t steps, DType dtype = DType::f32,
                           Device& d = cpu_device());
    // An n x m matrix (m defaults to n) of ones on diagonal k (k > 0 above the main one) and
    // zeros elsewhere (numpy.eye).
    static Tensor eye(int64_t n, std::optional<int64_t> m = {}, int64_t k = 0,
                      DType dtype = DType::f32, Device& d = cpu_device());
    // Uniform in [0, 1) and standard normal, from a counter-based hash of (seed, element index):
    // the same values on every device (float dtypes only).
    static Tensor rand(const Shape& shape, uint64_t seed, DType dtype = DType::f32,
                       Device& d = cpu_device());
    static Tensor randn(const Shape& shape, uint64_t seed, DType dtype = DType::f32,
                        Device& d = cpu_device());

    const Shape& shape() const;
    DType dtype() const;
    Device& device() const;
    size_t rank() const { return shape().size(); }
    int64_t numel() const;
    int64_t size(int64_t axis) const;
    bool defined() const { return node_ != nullptr; }
    bool resolved() const;

    // Computes this tensor now (and whatever it needs that is not computed yet).
    Tensor& resolve();
    // Its elements, row-major; T must be the tensor's dtype (Half / BFloat16 for f16 / bf16).
    template <typename T>
    std::vector<T> to_host() const {
        std::vector<T> out(static_cast<size_t>(numel()));
        to_host_raw(out.data(), dtype_of<T>::value, out.size());
        return out;
    }
    std::vector<uint8_t> to_host_bytes() const;
    // The resolved data (row-major, contiguous).
    const Buffer& buffer() const;

    // Views: index maps folded into whatever reads them, never copies.
    Tensor reshape(const Shape& shape) const;  // one extent may be -1
    Tensor permute(const std::vector<int64_t>& order) const;
    Tensor transpose(int64_t a, int64_t b) const;
    Tensor expand(const Shape& shape) const;  // numpy broadcasting to `shape`
    Tensor broadcast_to(const Shape& shape) const { return expand(shape); }
    // Elements start, start+step, ... below stop along `axis` (negative start/stop count from
    // the end, clamped as Python slices are; step >= 1).
    Tensor slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
    // `before[i]` and `after[i]` elements of `value` around axis i (one pair per axis).
    Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& widths, double value = 0) const;
    Tensor squeeze(int64_t axis) const;
    Tensor unsqueeze(int64_t axis) const;
    Tensor flatten() const;
    Tensor to(DType dtype) const;  // a cast
    // The same values on `device` (resolved here, its bits copied through the host); itself
    // when it already lives there.
    Tensor to(Device& device) const;

    // Reductions over `axes` (empty: all), as the free functions below.
    Tensor sum(const std::vector<int64_t>& axes = {}, bool keepdim = false) const;
    Tensor mean(const std::vector<int64_t>& axes = {}, bool keepdim = false) const;
    Tensor max(const std::vector<int64_t>& axes = {}, bool keepdim = false) const;
    Tensor min(const std::vector<int64_t>& axes = {}, bool keepdim = false) const;
    Tensor prod(const std::vector<int64_t>& axes = {}, bool keepdim = false) const;

    const std::shared_ptr<graph::Node>& node() const;

  private:
    void to_host_raw(void* data, DType dtype, size_t count) const;
    std::shared_ptr<graph::Node> node_;
};

// Resolves several tensors in one plan (shared work is computed once).
void resolve(std::span<Tensor> tensors);

// Elementwise, with numpy broadcasting. Operands must share a dtype and a device; a C++ number
// takes the tensor's dtype (it must be representable in it exactly for integer dtypes).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);
// Comparisons give bool tensors.
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator&&(const Tensor& a, const Tensor& b);  // bool tensors
Tensor operator||(const Tensor& a, const Tensor& b);
Tensor operator!(const Tensor& a);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
enum class GeluForm { erf, tanh };
Tensor gelu(const Tensor& x, GeluForm form = GeluForm::erf);
Tensor silu(const Tensor& x);
Tensor square(const Tensor& x);
Tensor recip(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even
Tensor isnan(const Tensor& x);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, double b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(double a, const Tensor& b);
Tensor maximum(double a, const Tensor& b);
// minimum(maximum(x, lo), hi) with either bound left out (torch.clamp: lo > hi gives hi; NaN in
// x or a bound propagates). kiln::Error when neither bound is given.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi);
Tensor clamp(const Tensor& x, const Tensor* lo, const Tensor* hi);
// Python's // and % (numpy's floor_divide and remainder, torch.remainder): the quotient rounded
// down and a remainder with the divisor's sign, a == floor_divide(a, b) * b + remainder(a, b).
// Integers: exact; x // 0 == 0 and x % 0 == x (kiln's x / 0 == 0, never a trap); MIN // -1 wraps to
// MIN. Floats (in f32, f16/bf16 widened and rounded once): q = floor(a / b) and r = a - b * q
// computed exactly before its rounding (Dekker's product), then one step toward the divisor's
// sign: numpy's values wherever |a / b| < 2^22. Beyond that the remainder is within rounding of
// a - b * q but may lie outside [0, b); x // 0 is ±inf, x % 0 and x % ±inf NaN.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, double b);
Tensor floor_divide(double a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, double b);
Tensor remainder(double a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, double b);
Tensor operator%(double a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor cast(const Tensor& x, DType dtype);

// Reductions over `axes` (empty: every axis). sum and prod of i8/u8/bool give i32; mean needs a
// float dtype; argmax/argmin give i32 (the first index of the extreme value; NaN counts as the
// largest), over one axis.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim = false);
// Over every element (torch's argmax() without a dim): the flat row-major index, a scalar.
Tensor argmax(const Tensor& x);
Tensor argmin(const Tensor& x);
// Cumulative sum and product along `axis` (torch.cumsum, torch.cumprod; i8/u8/bool give i32, as
// sum and prod). A two-level blocked scan: element j is the fold (sum's or prod's order) of its
// block's prefix, combined with the fold of the blocks before it (blocks of ceil(sqrt(n))), so
// it is not the sequential sum, and costs O(n^1.5) per row; f16/bf16 in f32, rounded once.
Tensor cumsum(const Tensor& x, int64_t axis);
Tensor cumprod(const Tensor& x, int64_t axis);
// Sum of squared deviations from the mean over (n - correction).
Tensor variance(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
                bool keepdim = false);
// The standard deviation (torch.std): sqrt(variance(x, axes, correction)), in f32 for f16/bf16 and
// rounded once.
Tensor std_dev(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
               bool keepdim = false);
// log(sum(exp(x - m))) + m over `axes` with m the max (torch.logsumexp): a row of -inf gives
// -inf, a row holding +inf gives +inf (m is taken as 0 where it is infinite). Float dtypes.
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// x / sqrt(mean(x^2 over the last axis) + eps) * weight (weight: the last axis's length).
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);
// (x - mean) / sqrt(var + eps) over the last `normalized` axes, then * weight + bias when given.
Tensor layer_norm(const Tensor& x, int64_t normalized = 1, const Tensor* weight = nullptr,
                  const Tensor* bias = nullptr, double eps = 1e-5);

// Contractions (exact class: each output is fma chains over k in order, in chunks of 256 terms
// whose sums are added in order (kiln/ops/contraction_order.hpp), in f32 from the widened
// inputs, rounded once to the inputs' dtype; docs/graph.md).
// torch.matmul's shapes: a [..., m, k] · b [..., k, n] -> [..., m, n] with the batch axes
// broadcast; a vector operand [k] counts as [1, k] (a) or [k, 1] (b) and its axis is dropped.
// `arithmetic` (kiln/matmul_class.hpp): MatmulClass::tensor_core, for f16/bf16 inputs, lets a
// CUDA device with tensor cores compute it by mma steps (within a stated bound of the exact
// result, docs/numerics.md); other devices compute the exact class either way.
Tensor matmul(const Tensor& a, const Tensor& b, MatmulClass arithmetic = MatmulClass::exact);
// x · weightᵀ (+ bias): weight [out_features, in_features], bias [out_features] (torch's linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias = nullptr,
              MatmulClass arithmetic = MatmulClass::exact);
// Q8_0 weights as two tensors: values i8 [..., k] (k a multiple of 32) and one scale for each 32
// of them along k, scales [..., k/32] of a float dtype. The dequantized tensor is f32 [..., k],
// f32(value) * f32(scale). A matmul or linear reading it computes each element as it reads it
// (its prologue, docs/graph.md), so the f32 weights are never written to memory.
Tensor dequantize_q8_0(const Tensor& values, const Tensor& scales);
// Block-quantized weights as planar tensors (GgufFile::load_blocks gives any GGUF block format in
// this form): values i8 [..., k], one scale for each block of k / scales.shape().back() values
// along k, scales [..., k/block] of a float dtype, and optionally mins of the scales' shape. The
// dequantized tensor is f32 [..., k]: f32(value) * f32(scale), less f32(min) where mins are given,
// each operation rounded on its own. As with dequantize_q8_0, a matmul or linear reading it
// computes each element as it reads it.
Tensor dequantize_blocks(const Tensor& values, const Tensor& scales, const Tensor* mins = nullptr);
// torch.nn.functional.conv1d: x [n, c_in, length] (or [c_in, length]), weight [c_out,
// c_in/groups, kernel], bias [c_out] -> [n, c_out, l_out] (or [c_out, l_out]), with
// l_out = (length + 2*padding - dilation*(kernel-1) - 1) / stride + 1. Each output is
// acc = fma(x, w, acc) over (channel, tap) in order, taps in the padding skipped (no padded
// copy); the bias is added after the rounding, as a map the planner fuses into the store.
// arithmetic: the class (kiln/ops/conv1d.hpp); tensor_core (f16/bf16 inputs) runs the implicit
// GEMM on tensor cores where the device has them, within the class's stated bound, and the exact
// class elsewhere.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor* bias = nullptr,
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
              MatmulClass arithmetic = MatmulClass::exact);
// torch.nn.functional.scaled_dot_product_attention without dropout: softmax(q·kᵀ·scale (+ the
// causal mask)) · v for q [b, heads, seq_q, d] (or [heads, seq_q, d]) and k, v [b, kv_heads,
// seq_k, d] (kv_heads dividing heads: grouped-query attention). scale defaults to 1/sqrt(d)
// (f32). Causal masking is bottom-right aligned (row i sees keys j <= i + seq_k - seq_q) and
// needs seq_q <= seq_k. One launch: the online softmax over key blocks of a size the op fixes
// (kiln/ops/attention.hpp), so every schedule and device gives the same bits. key_lengths (i32
// [batch], each 1 to seq_k) masks a padded batch: batch b's rows see only its first
// key_lengths[b] keys (the rest never touched, as the causal mask); a length out of range is a
// kiln::Error when the result is resolved. arithmetic: the class (kiln/ops/attention.hpp);
// tensor_core (f16/bf16 inputs) runs q·kᵀ and p·v on tensor cores where the device has them, within
// the class's stated bound of the exact result, and the exact class elsewhere.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    bool causal = false, std::optional<double> scale = {},
                                    const Tensor* key_lengths = nullptr,
                                    MatmulClass arithmetic = MatmulClass::exact);

// numpy's / torch's einsum over letter subscripts ("ij,jk->ik"; without "->" the output is the
// labels seen once, sorted). Two float operands sharing a summed label are one batched matmul
// (its exact class; labels only one of them has, and not the output, summed first); otherwise
// the operands' broadcast product (multiplied in order) summed over the labels the output lacks
// (sum's dtype rule). Each label has one extent; '...' stands for the axes not labelled, numpy's
// broadcasting between operands (and must be in an explicit output where the operands have it);
// a label repeated within one operand takes its diagonal ("ii->i", "ii" the trace). A count of
// subscripts or labels that does not match, or an output label twice, is a kiln::Error.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

// Laid end to end along `axis` (every other extent equal).
Tensor concat(const std::vector<Tensor>& parts, int64_t axis = 0);
// Tensors of one shape stacked along a new axis `axis` (in [-rank-1, rank]).
Tensor stack(const std::vector<Tensor>& parts, int64_t axis = 0);
// Views of consecutive pieces along `axis`: each `size` long (the last may be shorter; torch's
// split), or of the given sizes (which must add up to the axis's extent).
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis = 0);
// `chunks` pieces of ceil(extent / chunks) (torch.chunk: fewer when the extent runs out).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis = 0);

// The lower (tril) or upper (triu) triangle of the last two axes: elements with
// column - row <= diagonal (tril) or >= diagonal (triu) kept, the others 0.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// index's shape + [num_classes] of `dtype`: 1 where the last coordinate equals the index, else 0
// (torch.nn.functional.one_hot). index: i32, u32 or i64; an index outside [0, num_classes) is a
// kiln::Error when the result is resolved.
Tensor one_hot(const Tensor& index, int64_t num_classes, DType dtype = DType::i64);
// x's shape and device, every element `value` (zeros_like, ones_like: 0, 1), in x's dtype
// unless another is given.
Tensor full_like(const Tensor& x, double value, std::optional<DType> dtype = {});
Tensor zeros_like(const Tensor& x, std::optional<DType> dtype = {});
Tensor ones_like(const Tensor& x, std::optional<DType> dtype = {});

// Sorting along one axis (negative counts from the end). The order is total and stable: NaN
// counts as larger than every number (last ascending, first descending, as torch.sort), and
// equal values keep their index order (-0.0 and +0.0 are equal). Indices are i32. Each element's
// place is counted (the elements of its row that sort before it), so a row of n costs O(n^2)
// comparisons: meant for rows up to a few thousand. Every device gives the same result.
struct Sorted {
    Tensor values;
    Tensor indices;
};
Sorted sort(const Tensor& x, int64_t axis = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false);
// The k largest (or smallest) along `axis` with their indices (torch.topk); always sorted, so
// `sorted` changes nothing. kiln::Error unless 0 <= k <= the axis's extent.
Sorted topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true, bool sorted = true);

// x[mask] as numpy: mask is bool with x's leading extents (mask.shape == x.shape[:mask.rank]);
// the elements (or rows of the remaining axes) where it is true, in row-major order, stacked
// along a new first axis: [count, x.shape[mask.rank:]...]. The count depends on the data, so the
// mask is resolved and read to the host here (not lazily), and its positions copied back.
Tensor boolean_mask(const Tensor& x, const Tensor& mask);

// Indexing. Indices are i32, u32 or i64 tensors; an index out of range is a kiln::Error when the
// result is resolved.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);  // index: 1-D
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);        // torch.gather
Tensor embedding(const Tensor& table, const Tensor& ids);                 // table [V, D]
// A copy of `base` with src's elements added at index's positions along `axis` (torch's
// scatter_add: index and src of one shape); for each destination element the additions happen
// in increasing order of the source position.
Tensor scatter_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src);

}  // namespace kiln
