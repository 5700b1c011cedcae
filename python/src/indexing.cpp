// Contractions (matmul, linear, dequantize_q8_0, dequantize_blocks, conv1d,
// scaled_dot_product_attention), concat, and indexing ops (index_select, gather, embedding,
// scatter_add).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include "bindings.hpp"
#include "kiln/error.hpp"

namespace kiln::python {

void bind_indexing(nb::module_& m, TensorClass& cls) {
    using nb::arg;
    auto arithmetic = [](bool tensor_cores) {
        return tensor_cores ? MatmulClass::tensor_core : MatmulClass::exact;
    };
    m.def(
        "matmul",
        [arithmetic](const Tensor& a, const Tensor& b, bool tensor_cores) {
            return matmul(a, b, arithmetic(tensor_cores));
        },
        arg("a"), arg("b"), arg("tensor_cores") = false,
        "torch.matmul's shapes: [..., m, k] @ [..., k, n] -> [..., m, n], batch axes broadcast; "
        "each output is fma(a, b, acc) over k in order from +0 (bit-identical on every device). "
        "tensor_cores=True (f16/bf16 inputs): tensor-core mma steps on CUDA devices that have "
        "them, within a stated bound of that; the same exact result elsewhere.");
    cls.def(
        "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, arg("b"));
    m.def(
        "linear",
        [arithmetic](const Tensor& x, const Tensor& weight, const Tensor* bias, bool tensor_cores) {
            return linear(x, weight, bias, arithmetic(tensor_cores));
        },
        arg("x"), arg("weight"), arg("bias").none() = nb::none(), arg("tensor_cores") = false,
        "x @ weight.T (+ bias): weight [out_features, in_features] (torch's linear); "
        "tensor_cores as in matmul.");
    m.def("dequantize_q8_0", &dequantize_q8_0, arg("values"), arg("scales"),
          "Q8_0 weights: values i8 [..., k] (k a multiple of 32), scales [..., k/32] (a float "
          "dtype), one scale for each 32 values -> f32 value * scale, [..., k]. A matmul or linear "
          "reading it computes it as it reads each element (the f32 weights are never written).");
    m.def(
        "dequantize_blocks",
        [](const Tensor& values, const Tensor& scales, const Tensor* mins) {
            return dequantize_blocks(values, scales, mins);
        },
        arg("values"), arg("scales"), arg("mins").none() = nb::none(),
        "Block-quantized weights as planar tensors (GgufFile.load_blocks): values i8 [..., k], "
        "scales [..., k/block] (a float dtype), optional mins of the scales' shape -> f32 "
        "value * scale (- min), [..., k], each operation rounded on its own. A matmul or linear "
        "reading it computes it as it reads each element.");
    m.def(
        "conv1d",
        [arithmetic](const Tensor& x, const Tensor& weight, const Tensor* bias, int64_t stride,
                     int64_t padding, int64_t dilation, int64_t groups, bool tensor_cores) {
            return conv1d(x, weight, bias, stride, padding, dilation, groups,
                          arithmetic(tensor_cores));
        },
        arg("x"), arg("weight"), arg("bias").none() = nb::none(), arg("stride") = 1,
        arg("padding") = 0, arg("dilation") = 1, arg("groups") = 1, arg("tensor_cores") = false,
        "torch.nn.functional.conv1d: x [n, c_in, length] (or [c_in, length]), weight [c_out, "
        "c_in/groups, kernel], bias [c_out]; each output is fma(x, w, acc) over (channel, tap) in "
        "order, padding taps skipped (bit-identical on every device). tensor_cores as in matmul.");
    m.def(
        "scaled_dot_product_attention",
        [arithmetic](const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                     std::optional<double> scale, const Tensor* key_lengths, bool tensor_cores) {
            return scaled_dot_product_attention(q, k, v, causal, scale, key_lengths,
                                                arithmetic(tensor_cores));
        },
        arg("q"), arg("k"), arg("v"), arg("is_causal") = false, arg("scale").none() = nb::none(),
        arg("key_lengths").none() = nb::none(), arg("tensor_cores") = false,
        "torch.nn.functional.scaled_dot_product_attention without dropout or mask: "
        "softmax(q @ k.T * scale) @ v for q [b, heads, seq_q, d] and k, v [b, kv_heads, seq_k, "
        "d] (or without b); causal masking bottom-right aligned; scale defaults to 1/sqrt(d); "
        "key_lengths (i32 [b]) masks each batch's keys past its length (padded sequences). "
        "One launch: the online softmax over key blocks of a fixed size (the same bits on "
        "every device). tensor_cores=True (f16/bf16 inputs): q @ k.T and p @ v in tensor-core "
        "mma steps on CUDA devices that have them, within the class's stated bound; the exact "
        "class elsewhere.");
    m.def("concat", &concat, arg("tensors"), arg("axis") = 0,
          "Tensors laid end to end along axis (every other extent equal).");
    m.def("cat", &concat, arg("tensors"), arg("axis") = 0, "concat.");
    m.def(
        "einsum",
        [](const std::string& equation, nb::args args) {
            std::vector<Tensor> operands;
            nb::handle items = args;
            if (args.size() == 1 && !nb::isinstance<Tensor>(args[0])) items = args[0];
            for (nb::handle h : items) {
                Tensor t;
                if (!nb::try_cast<Tensor>(h, t))
                    throw nb::type_error(
                        fmt::format("einsum: an operand is {}; expected kiln.Tensor",
                                    nb::inst_name(h).c_str())
                            .c_str());
                operands.push_back(t);
            }
            return einsum(equation, operands);
        },

        "einsum(equation, *operands) or einsum(equation, [operands]): numpy's einsum over letter "
        "subscripts ('ij,jk->ik'; implicit output without '->'). Two float operands sharing a "
        "summed label run as one matmul; otherwise a broadcast product summed. '...' broadcasts "
        "as numpy's; a label twice in one operand takes its diagonal ('ii' is the trace).");
    m.def("stack", &stack, arg("tensors"), arg("axis") = 0,
          "Tensors of one shape stacked along a new axis.");
    const auto split_fn = [](const Tensor& x, nb::handle sizes, int64_t axis) {
        if (nb::isinstance<nb::int_>(sizes)) return split(x, to_int64(sizes, "split"), axis);
        return split(x, to_ints(sizes, "split: sizes"), axis);
    };
    const char* split_doc =
        "Views of consecutive pieces along axis: each `sizes` long (an int; the last may be "
        "shorter) or of the listed sizes (which must add up to the axis's extent); a list.";
    m.def("split", split_fn, arg("x"), arg("sizes"), arg("axis") = 0, split_doc);
    cls.def("split", split_fn, arg("sizes"), arg("axis") = 0, split_doc);
    const char* chunk_doc =
        "`chunks` views of ceil(extent / chunks) along axis (fewer when the extent runs out).";
    m.def("chunk", &chunk, arg("x"), arg("chunks"), arg("axis") = 0, chunk_doc);
    cls.def("chunk", &chunk, arg("chunks"), arg("axis") = 0, chunk_doc);
    const auto one_hot_fn = [](const Tensor& index, int64_t num_classes, nb::handle dtype) {
        if (num_classes == -1) {
            if (index.numel() == 0)
                fail("one_hot: index {} is empty; give num_classes", fmt::join(index.shape(), "x"));
            nb::gil_scoped_release release;
            num_classes = max(cast(index, DType::i64)).to_host<int64_t>()[0] + 1;
        }
        return one_hot(index, num_classes,
                       dtype.is_none() ? DType::i64 : to_dtype(dtype, "one_hot"));
    };
    const char* one_hot_doc =
        "index.shape + (num_classes,): 1 where the last coordinate equals the index, else 0 "
        "(torch.nn.functional.one_hot; i64 unless dtype is given). index: i32, u32 or i64; one "
        "outside [0, num_classes) is a kiln.Error when resolved. num_classes=-1 takes the "
        "largest index + 1, resolving index.";
    m.def("one_hot", one_hot_fn, arg("index"), arg("num_classes") = -1, arg("dtype") = nb::none(),
          one_hot_doc);
    m.def("index_select", &index_select, arg("x"), arg("axis"), arg("index"),
          "x's entries at the 1-D i32/u32 index along axis.");
    m.def("gather", &gather, arg("x"), arg("axis"), arg("index"), "torch.gather.");
    m.def("embedding", &embedding, arg("table"), arg("ids"),
          "Rows of table [V, D] at ids (i32/u32): ids.shape + (D,).");
    m.def("scatter_add", &scatter_add, arg("base"), arg("axis"), arg("index"), arg("src"),
          "A copy of base with src added at index's positions along axis (torch's scatter_add), "
          "in increasing source order.");
    cls.def(
        "index_select",
        [](const Tensor& x, int64_t axis, const Tensor& index) {
            return index_select(x, axis, index);
        },
        arg("axis"), arg("index"));
    cls.def(
        "gather",
        [](const Tensor& x, int64_t axis, const Tensor& index) { return gather(x, axis, index); },
        arg("axis"), arg("index"));
}

}  // namespace kiln::python
