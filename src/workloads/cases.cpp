// Built-in graph workloads.
#include "workloads/cases.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.hpp"
#include "ops/matmul/matmul.hpp"

namespace kiln::workloads {

namespace {

Tensor input(Device& d, const Shape& shape, uint64_t seed, DType dtype) {
    return Tensor::randn(shape, seed, dtype, d).resolve();
}

double bytes_of(const std::vector<Tensor>& ts) {
    double b = 0;
    for (const auto& t : ts) b += static_cast<double>(t.numel()) * size_of(t.dtype());
    return b;
}

}  // namespace

const std::vector<std::string>& case_names() {
    static const std::vector<std::string> names{
        "add_square", "mul_rank4", "softmax",   "layer_norm", "rms_norm", "gelu_mlp_epilogue",
        "matmul",     "mlp",       "q8_linear", "conv1d",     "attention"};
    return names;
}

Case make_case(const std::string& name, Device& d, const CaseOptions& o) {
    if (!is_float(o.dtype))
        fail("profile {}: inputs of dtype {}; expected f32, f16 or bf16", name,
             kiln::name(o.dtype));
    Case c;
    c.name = name;
    const int64_t rows = o.rows ? o.rows : 4096;
    const int64_t n = o.n ? o.n : 4096;
    if (name == "add_square") {
        const int64_t count = o.n ? o.n : (d.info().simt ? int64_t{1} << 26 : int64_t{1} << 24);
        c.inputs = {input(d, {count}, 1, o.dtype), input(d, {count}, 2, o.dtype)};
        c.build = [](const std::vector<Tensor>& in) {
            Tensor s = in[0] + in[1];
            return std::vector<Tensor>{s * s};
        };
        c.shape = fmt::format("{}", count);
    } else if (name == "mul_rank4") {
        const Shape shape = o.shape.empty() ? Shape{9, 11, 32, 16} : o.shape;
        if (shape.size() != 4)
            fail("profile mul_rank4: --shape has {} axes; expected 4", shape.size());
        Shape bshape = shape;
        bshape[1] = 1;
        c.inputs = {input(d, shape, 3, o.dtype), input(d, bshape, 4, o.dtype)};
        c.build = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[1]}; };
        c.shape = fmt::format("{}", fmt::join(shape, "x"));
    } else if (name == "softmax") {
        c.inputs = {input(d, {rows, n}, 5, o.dtype)};
        c.build = [](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{softmax(in[0], -1)};
        };
        c.shape = fmt::format("{}x{}", rows, n);
    } else if (name == "rms_norm") {
        c.inputs = {input(d, {rows, n}, 5, o.dtype), input(d, {n}, 6, o.dtype)};
        c.build = [](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{rms_norm(in[0], in[1], 1e-6)};
        };
        c.shape = fmt::format("{}x{}", rows, n);
    } else if (name == "layer_norm" || name == "gelu_mlp_epilogue") {
        c.inputs = {input(d, {rows, n}, 5, o.dtype), input(d, {n}, 6, o.dtype),
                    input(d, {n}, 7, o.dtype)};
        if (name == "layer_norm")
            c.build = [](const std::vector<Tensor>& in) {
                return std::vector<Tensor>{layer_norm(in[0], 1, &in[1], &in[2])};
            };
        else
            c.build = [](const std::vector<Tensor>& in) {
                return std::vector<Tensor>{gelu(in[0] * in[1] + in[2])};
            };
        c.shape = fmt::format("{}x{}", rows, n);
    } else if (name == "matmul") {
        const int64_t size = o.n ? o.n : (d.info().simt ? 1024 : 512);
        c.inputs = {input(d, {size, size}, 8, o.dtype), input(d, {size, size}, 9, o.dtype)};
        c.build = [cls = o.arithmetic](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{matmul(in[0], in[1], cls)};
        };
        c.shape = fmt::format("{}x{}x{}", size, size, size);
        c.terms = double(size) * double(size) * double(size);
    } else if (name == "mlp") {
        // A transformer's feed-forward block: --rows tokens of --n features, 4n hidden.
        const int64_t tokens = o.rows ? o.rows : 128, width = o.n ? o.n : 384;
        c.inputs = {input(d, {tokens, width}, 10, o.dtype),
                    input(d, {4 * width, width}, 11, o.dtype), input(d, {4 * width}, 12, o.dtype),
                    input(d, {width, 4 * width}, 13, o.dtype), input(d, {width}, 14, o.dtype)};
        c.build = [cls = o.arithmetic](const std::vector<Tensor>& in) {
            Tensor hidden = gelu(linear(in[0], in[1], &in[2], cls));
            return std::vector<Tensor>{linear(hidden, in[3], &in[4], cls)};
        };
        c.shape = fmt::format("{}x{}", tokens, width);
        c.terms = 2.0 * double(tokens) * double(width) * double(4 * width);
    } else if (name == "q8_linear") {
        // --rows tokens through a linear layer with --n x --n Q8_0 weights, dequantized (and
        // cast to --dtype) where the matmul reads them: its prologue.
        const int64_t tokens = o.rows ? o.rows : 32, width = o.n ? o.n : 4096;
        if (width % 32 != 0) fail("profile q8_linear: --n {}; expected a multiple of 32", width);
        Tensor values = (Tensor::rand({width, width}, 22, DType::f32, d) * 254.0 - 127.0)
                            .to(DType::i8)
                            .resolve();
        c.inputs = {input(d, {tokens, width}, 21, o.dtype), values,
                    (input(d, {width, width / 32}, 23, DType::f32) * 0.01).resolve()};
        c.build = [cls = o.arithmetic, dtype = o.dtype](const std::vector<Tensor>& in) {
            const Tensor w = dequantize_q8_0(in[1], in[2]).to(dtype);
            return std::vector<Tensor>{linear(in[0], w, nullptr, cls)};
        };
        c.shape = fmt::format("{}x{}x{}", tokens, width, width);
        c.terms = double(tokens) * double(width) * double(width);
    } else if (name == "conv1d") {
        // --shape batch,in_channels,length,out_channels,kernel; padding keeps the length; bias
        // and gelu fused into the conv's store.
        const Shape shape = o.shape.empty() ? (d.info().simt ? Shape{16, 256, 4096, 256, 3}
                                                             : Shape{1, 256, 1024, 256, 3})
                                            : o.shape;
        if (shape.size() != 5)
            fail(
                "profile conv1d: --shape has {} values; expected batch,in_channels,length,"
                "out_channels,kernel",
                shape.size());
        const int64_t batch = shape[0], ci = shape[1], length = shape[2], co = shape[3],
                      kernel = shape[4];
        c.inputs = {input(d, {batch, ci, length}, 15, o.dtype),
                    input(d, {co, ci, kernel}, 16, o.dtype), input(d, {co}, 17, o.dtype)};
        c.build = [kernel, cls = o.arithmetic](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{
                gelu(conv1d(in[0], in[1], &in[2], 1, kernel / 2, 1, 1, cls))};
        };
        c.shape = fmt::format("{}x{}x{}->{}k{}", batch, ci, length, co, kernel);
        const int64_t l_out = length + 2 * (kernel / 2) - kernel + 1;
        c.terms = double(batch) * double(co) * double(l_out) * double(ci) * double(kernel);
    } else if (name == "attention") {
        // --shape batch,heads,seq,head_dim: causal self-attention.
        const Shape shape = o.shape.empty() ? Shape{1, 8, 256, 64} : o.shape;
        if (shape.size() != 4)
            fail("profile attention: --shape has {} values; expected batch,heads,seq,head_dim",
                 shape.size());
        c.inputs = {input(d, shape, 18, o.dtype), input(d, shape, 19, o.dtype),
                    input(d, shape, 20, o.dtype)};
        c.build = [cls = o.arithmetic](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{
                scaled_dot_product_attention(in[0], in[1], in[2], true, {}, nullptr, cls)};
        };
        c.shape = fmt::format("{}x{}x{}x{} causal", shape[0], shape[1], shape[2], shape[3]);
        // q·kᵀ and p·v over the keys each row sees (row i: i + 1 of them).
        c.terms = 2.0 * double(shape[0]) * double(shape[1]) * double(shape[3]) *
                  (double(shape[2]) * double(shape[2] + 1) / 2.0);
    } else {
        fail("no case '{}'; the cases are {}", name, fmt::join(case_names(), ", "));
    }
    c.bytes = bytes_of(c.inputs) + bytes_of(c.build(c.inputs));
    c.exact = !((name == "matmul" || name == "mlp" || name == "q8_linear" || name == "conv1d" ||
                 name == "attention") &&
                o.arithmetic == MatmulClass::tensor_core && d.info().tensor_cores);
    return c;
}

}  // namespace kiln::workloads
