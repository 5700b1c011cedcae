// Built-in graph workloads, shared by `kiln profile`, the benchmarks and the conformance suite:
// each builds its inputs on a device (resolved, so they are leaves) and the graph under test.
//   add_square          (a + b)^2 over --n f32 elements
//   mul_rank4           a * b over a rank-4 --shape (b broadcast along the second axis)
//   softmax             softmax over the last axis of --rows x --n
//   layer_norm          layer_norm (weight and bias) over the last axis of --rows x --n
//   rms_norm            rms_norm (weight, eps 1e-6) over the last axis of --rows x --n
//   gelu_mlp_epilogue   gelu(x * w + b) over --rows x --n, w and b along the rows
//   matmul              a · b, square --n (f32)
//   mlp                 linear(gelu(linear(x, w1, b1)), w2, b2): --rows tokens of --n features,
//                       4n hidden (a transformer's feed-forward block)
//   q8_linear           linear(x, dequantize_q8_0(values, scales)): --rows tokens (32) of --n
//                       features (4096), --n x --n int8 weights with f32 scales (a prologue)
//   conv1d              gelu(conv1d(x, w, bias)), same padding: --shape batch,in_channels,
//                       length,out_channels,kernel (GPU 16,256,4096,256,3; CPU 1,256,1024,256,3)
//   attention           causal scaled_dot_product_attention of q, k, v: --shape batch,heads,
//                       seq,head_dim (1,8,256,64)
// Every case's inputs are in --dtype (f32 unless told); matmul and mlp take the caller's
// arithmetic class (exact unless told: --tensor-cores), and so does q8_linear.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::workloads {

struct CaseOptions {
    int64_t n = 0, rows = 0;   // 0: the case's default for the device
    Shape shape;               // mul_rank4, conv1d, attention; empty: the default
    DType dtype = DType::f32;  // the inputs' (a float dtype)
    MatmulClass arithmetic = MatmulClass::exact;  // matmul's, mlp's and q8_linear's
};

struct Case {
    std::string name;
    std::string shape;  // "4096x4096", for tables
    std::vector<Tensor> inputs;
    std::function<std::vector<Tensor>(const std::vector<Tensor>&)> build;
    double bytes = 0;  // the bytes a launch must move at least (inputs read once, outputs written)
    double terms = 0;  // the multiply-adds of its contractions
    // Whether its results are the oracle's bits: not where the tensor-core class runs on tensor
    // cores (within a bound of them instead, which the tests and conformance check).
    bool exact = true;
};

const std::vector<std::string>& case_names();
// kiln::Error naming the known cases when `name` is not one.
Case make_case(const std::string& name, Device& device, const CaseOptions& options = {});

}  // namespace kiln::workloads
