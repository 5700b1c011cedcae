// The graph areas: smoke, elementwise, broadcasting, views, reductions, normalization, softmax,
// indexing and dtypes. Each case builds a small graph through kiln::Tensor on drawn shapes and
// is compared with the graph oracle (check_graph).
#include <fmt/format.h>

#include "conformance/case.hpp"

namespace kiln::conformance {

namespace {

// Extents: rows and columns that fill and overflow every block size, and small leading axes.
const Dim kRows = Dim::range(1, 37);
const Dim kCols = Dim::range(1, 131);
const Dim kLong = Dim::range(1, 3001);
const Dim kSmall = Dim::range(1, 7);

constexpr DType kFloats[] = {DType::f32, DType::f16, DType::bf16};
constexpr DType kIntegers[] = {DType::i8, DType::u8, DType::i32, DType::u32, DType::i64};

Case graph_case(std::string area, std::string name, GraphBuilder build) {
    return {std::move(area), std::move(name),
            [build = std::move(build)](CaseContext& ctx) { check_graph(ctx, build); }};
}

// A case over one input of a drawn shape: outputs = f(x).
Case unary_case(std::string area, std::string name, DType t, std::vector<Dim> dims,
                std::function<std::vector<Tensor>(const Tensor&)> f, bool specials = false) {
    return graph_case(std::move(area), std::move(name), [=](CaseContext& ctx) {
        const Shape s = draw(ctx, dims);
        return GraphInstance{f(input_tensor(ctx, t, s, specials)), shape_text(s)};
    });
}

// A case over two inputs of one drawn shape: outputs = f(a, b).
Case binary_case(std::string area, std::string name, DType t, std::vector<Dim> dims,
                 std::function<std::vector<Tensor>(const Tensor&, const Tensor&)> f,
                 bool specials = false) {
    return graph_case(std::move(area), std::move(name), [=](CaseContext& ctx) {
        const Shape s = draw(ctx, dims);
        Tensor a = input_tensor(ctx, t, s, specials), b = input_tensor(ctx, t, s, specials);
        return GraphInstance{f(a, b), shape_text(s)};
    });
}

void smoke(std::vector<Case>& out) {
    out.push_back(binary_case("smoke", "add_square", DType::f32, {kLong},
                              [](const Tensor& a, const Tensor& b) {
                                  Tensor s = a + b;
                                  return std::vector<Tensor>{s * s};
                              }));
    out.push_back(unary_case("smoke", "softmax", DType::f32, {kRows, kCols},
                             [](const Tensor& x) { return std::vector<Tensor>{softmax(x, -1)}; }));
    out.push_back(unary_case("smoke", "sum", DType::f32, {kRows, kCols},
                             [](const Tensor& x) { return std::vector<Tensor>{sum(x, {1})}; }));
}

void elementwise(std::vector<Case>& out) {
    for (DType t : kFloats) {
        out.push_back(unary_case(
            "elementwise", fmt::format("unary_{}", name(t)), t, {kLong},
            [](const Tensor& x) {
                return std::vector<Tensor>{
                    exp(x),  log(x),    sqrt(x),    rsqrt(x), sin(x),  cos(x),
                    tanh(x), erf(x),    sigmoid(x), relu(x),  gelu(x), gelu(x, GeluForm::tanh),
                    silu(x), square(x), recip(x),   floor(x), ceil(x), round(x),
                    abs(x),  -x,        isnan(x)};
            },
            true));
        out.push_back(binary_case(
            "elementwise", fmt::format("binary_{}", name(t)), t, {kLong},
            [](const Tensor& a, const Tensor& b) {
                return std::vector<Tensor>{
                    a + b,         a - b,         a * b,     a / b,
                    minimum(a, b), maximum(a, b), pow(a, b), where(a < b, a, b),
                    a == b,        a != b,        a <= b,    a > b};
            },
            true));
        out.push_back(unary_case(
            "elementwise", fmt::format("scalars_{}", name(t)), t, {kLong},
            [](const Tensor& x) {
                return std::vector<Tensor>{x * 2.5 + 1.0, 1.0 / x, pow(x, 3.0), 0.5 - x,
                                           where(x > 0.0, x, 0.25)};
            },
            true));
    }
}

void broadcasting(std::vector<Case>& out) {
    out.push_back(graph_case("broadcasting", "row_by_column", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kRows, kCols});
        Tensor a = input_tensor(ctx, DType::f32, {s[0], 1});
        Tensor b = input_tensor(ctx, DType::f32, {1, s[1]});
        Tensor c = input_tensor(ctx, DType::f32, s);
        return GraphInstance{{a + b * c, a * b}, shape_text(s)};
    }));
    out.push_back(graph_case("broadcasting", "rank4", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kSmall, kSmall, kSmall, kCols});
        Tensor a = input_tensor(ctx, DType::f32, s);
        Tensor b = input_tensor(ctx, DType::f32, {1, s[1], 1, s[3]});
        return GraphInstance{{a * b, b - a}, shape_text(s)};
    }));
    out.push_back(graph_case("broadcasting", "scalar_and_expand", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kRows, kCols});
        Tensor x = input_tensor(ctx, DType::f32, s);
        Tensor one = input_tensor(ctx, DType::f32, {1});
        Tensor row = input_tensor(ctx, DType::f32, {s[1]});
        return GraphInstance{{x + one, row.expand(s) - x, x / row}, shape_text(s)};
    }));
    out.push_back(graph_case("broadcasting", "i32_rows", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kRows, kCols});
        Tensor x = input_tensor(ctx, DType::i32, s);
        Tensor col = input_tensor(ctx, DType::i32, {s[0], 1});
        return GraphInstance{{x * col, x - col}, shape_text(s)};
    }));
}

void views(std::vector<Case>& out) {
    const std::vector<Dim> matrix{kRows, kCols};
    out.push_back(unary_case("views", "transpose", DType::f32, matrix, [](const Tensor& x) {
        return std::vector<Tensor>{x.transpose(0, 1) + 1.0, x.transpose(0, 1).reshape({-1}) * 2.0};
    }));
    out.push_back(
        unary_case("views", "permute3", DType::f32, {kSmall, kRows, kCols}, [](const Tensor& x) {
            return std::vector<Tensor>{x.permute({2, 0, 1}) * 2.0,
                                       x.permute({1, 2, 0}).flatten() - 1.0};
        }));
    out.push_back(unary_case("views", "slice_pad", DType::f32, matrix, [](const Tensor& x) {
        return std::vector<Tensor>{x.slice(1, 1, -1, 2) + 0.0, x.pad({{1, 2}, {0, 3}}, 0.5) * 3.0,
                                   x.slice(0, 0, 1).squeeze(0) - 1.0, x.unsqueeze(1) * 2.0};
    }));
    out.push_back(
        binary_case("views", "concat", DType::f32, matrix, [](const Tensor& a, const Tensor& b) {
            return std::vector<Tensor>{concat({a, b * 2.0}, 1), concat({a, b}, 0) - 1.0};
        }));
    out.push_back(unary_case("views", "u8_transpose", DType::u8, matrix, [](const Tensor& x) {
        return std::vector<Tensor>{x.transpose(0, 1) + 1.0};
    }));
}

void reductions(std::vector<Case>& out) {
    const std::vector<Dim> matrix{kRows, kCols};
    for (DType t : kFloats)
        out.push_back(unary_case(
            "reductions", fmt::format("rows_{}", name(t)), t, matrix, [](const Tensor& x) {
                return std::vector<Tensor>{sum(x, {1}), max(x, {1}), min(x, {1}, true),
                                           mean(x, {1}), prod(x * 0.25 + 1.0, {1})};
            }));
    out.push_back(
        unary_case("reductions", "columns_and_all", DType::f32, matrix, [](const Tensor& x) {
            return std::vector<Tensor>{sum(x, {0}), max(x, {0}, true), sum(x), mean(x)};
        }));
    out.push_back(unary_case("reductions", "middle_axis", DType::f32, {kSmall, kRows, kCols},
                             [](const Tensor& x) {
                                 return std::vector<Tensor>{sum(x, {1}), max(x, {0, 2})};
                             }));
    out.push_back(
        unary_case("reductions", "arg_and_variance", DType::f32, matrix, [](const Tensor& x) {
            return std::vector<Tensor>{argmax(x, 1), argmin(x, 0), variance(x, {1}, 0),
                                       variance(x.pad({{0, 0}, {0, 1}}, 0.5), {1})};
        }));
    out.push_back(unary_case(
        "reductions", "nan_rows", DType::f32, matrix,
        [](const Tensor& x) {
            return std::vector<Tensor>{sum(x, {1}), max(x, {1}), argmax(x, 1)};
        },
        true));
    for (DType t : {DType::i8, DType::u8, DType::i32})
        out.push_back(unary_case(
            "reductions", fmt::format("integers_{}", name(t)), t, matrix, [](const Tensor& x) {
                return std::vector<Tensor>{sum(x, {1}), sum(x, {0}), prod(x, {1}), max(x, {1})};
            }));
    out.push_back(unary_case("reductions", "sum_bool", DType::boolean, matrix, [](const Tensor& x) {
        return std::vector<Tensor>{sum(x, {1}), sum(x)};
    }));
}

void normalization(std::vector<Case>& out) {
    for (DType t : kFloats)
        out.push_back(graph_case(
            "normalization", fmt::format("layer_and_rms_{}", name(t)), [t](CaseContext& ctx) {
                const Shape s = draw(ctx, {kRows, kCols});
                Tensor x = input_tensor(ctx, t, s);
                Tensor w = input_tensor(ctx, t, {s[1]});
                Tensor b = input_tensor(ctx, t, {s[1]});
                return GraphInstance{
                    {layer_norm(x, 1, &w, &b), rms_norm(x, w), layer_norm(x * 2.0)}, shape_text(s)};
            }));
    out.push_back(
        unary_case("normalization", "layer_norm_two_axes", DType::f32, {kSmall, kRows, kCols},
                   [](const Tensor& x) { return std::vector<Tensor>{layer_norm(x, 2)}; }));
}

void softmaxes(std::vector<Case>& out) {
    for (DType t : kFloats)
        out.push_back(
            unary_case("softmax", fmt::format("last_axis_{}", name(t)), t, {kRows, kCols},
                       [](const Tensor& x) {
                           return std::vector<Tensor>{softmax(x, -1), log_softmax(x * 3.0, -1)};
                       }));
    out.push_back(unary_case("softmax", "first_axis_and_rank3", DType::f32, {kSmall, kRows, kCols},
                             [](const Tensor& x) {
                                 return std::vector<Tensor>{softmax(x, 0), softmax(x, 1)};
                             }));
    out.push_back(unary_case(
        "softmax", "edge_values", DType::f32, {kRows, kCols},
        [](const Tensor& x) { return std::vector<Tensor>{softmax(x, -1)}; }, true));
}

void indexing(std::vector<Case>& out) {
    out.push_back(graph_case("indexing", "index_select_and_embedding", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kRows, kCols, kRows});
        Tensor x = input_tensor(ctx, DType::f32, {s[0], s[1]});
        Tensor rows = index_tensor(ctx, {s[2]}, s[0]);
        Tensor cols = index_tensor(ctx, {s[2]}, s[1]);
        Tensor ids = index_tensor(ctx, {s[2], 3}, s[0]);
        return GraphInstance{
            {index_select(x, 0, rows), index_select(x * 2.0, 1, cols), embedding(x, ids)},
            shape_text(s)};
    }));
    out.push_back(graph_case("indexing", "gather", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kRows, kCols, kCols});
        Tensor x = input_tensor(ctx, DType::f32, {s[0], s[1]});
        Tensor idx = index_tensor(ctx, {s[0], s[2]}, s[1]);
        return GraphInstance{{gather(x, 1, idx), gather(x + 1.0, 1, idx) * 2.0}, shape_text(s)};
    }));
    for (DType t : {DType::f32, DType::i32})
        out.push_back(
            graph_case("indexing", fmt::format("scatter_add_{}", name(t)), [t](CaseContext& ctx) {
                const Shape s = draw(ctx, {kRows, kCols, kRows});
                Tensor base = input_tensor(ctx, t, {s[0], s[1]});
                Tensor src = input_tensor(ctx, t, {s[2], s[1]});
                Tensor idx = index_tensor(ctx, {s[2], s[1]}, s[0]);
                return GraphInstance{{scatter_add(base, 0, idx, src)}, shape_text(s)};
            }));
}

void dtypes(std::vector<Case>& out) {
    for (DType from : all_dtypes)
        out.push_back(unary_case(
            "dtypes", fmt::format("casts_from_{}", name(from)), from, {kLong},
            [from](const Tensor& x) {
                std::vector<Tensor> casts;
                for (DType to : all_dtypes)
                    if (to != from) casts.push_back(cast(x, to));
                return casts;
            },
            true));
    for (DType t : kIntegers)
        out.push_back(binary_case("dtypes", fmt::format("arithmetic_{}", name(t)), t, {kLong},
                                  [](const Tensor& a, const Tensor& b) {
                                      return std::vector<Tensor>{
                                          a + b, a - b,         a * b,
                                          a / b, minimum(a, b), maximum(a, b),
                                          a < b, a == b,        where(a > b, a, b)};
                                  }));
    out.push_back(binary_case("dtypes", "logic_bool", DType::boolean, {kLong},
                              [](const Tensor& a, const Tensor& b) {
                                  return std::vector<Tensor>{a && b, a || b, !a, a == b};
                              }));
}

// Graph contractions (matmul, linear, conv1d, attention) with the maps the planner fuses into
// their operands and epilogues; the ops' own schedule points are their areas' op cases.
void contractions(std::vector<Case>& out) {
    out.push_back(graph_case("matmul", "graph_linear_epilogue", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kRows, Dim::range(1, 67), kSmall});
        Tensor x = input_tensor(ctx, DType::f32, {s[0], s[1]});
        Tensor w = input_tensor(ctx, DType::f32, {s[2] * 5, s[1]});
        Tensor b = input_tensor(ctx, DType::f32, {s[2] * 5});
        Tensor r = input_tensor(ctx, DType::f32, {s[0], s[2] * 5});
        return GraphInstance{{gelu(linear(x, w, &b)) + r, linear(x * 2.0, w)}, shape_text(s)};
    }));
    out.push_back(graph_case("matmul", "graph_batched_transposed", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {kSmall, kRows, Dim::range(1, 67), kRows});
        Tensor a = input_tensor(ctx, DType::f32, {s[0], s[2], s[1]});
        Tensor b = input_tensor(ctx, DType::f32, {s[2], s[3]});
        return GraphInstance{{matmul(a.transpose(1, 2), b), matmul(a.transpose(1, 2), b) * 0.5},
                             shape_text(s)};
    }));
    // conv1d: batch, channels per group, groups (1 or 2), length, out channels per group,
    // stride; kernel 3, padding 1; bias and relu fused into its launch.
    out.push_back(graph_case("conv", "graph_conv1d_epilogue", [](CaseContext& ctx) {
        const Shape s = draw(
            ctx, {Dim::range(1, 4), kSmall, Dim::range(1, 3), kCols, kSmall, Dim::range(1, 3)});
        const int64_t groups = s[2], c_in = s[1] * groups, c_out = s[4] * groups;
        Tensor x = input_tensor(ctx, DType::f32, {s[0], c_in, s[3]});
        Tensor w = input_tensor(ctx, DType::f32, {c_out, s[1], 3});
        Tensor b = input_tensor(ctx, DType::f32, {c_out});
        return GraphInstance{{relu(conv1d(x, w, &b, s[5], 1, 1, groups))}, shape_text(s)};
    }));
    // Attention: batch, kv heads (x2 query heads), seq_q, extra keys, head_dim; causal and
    // plain over a padded batch (drawn key lengths), with a scaled residual after it.
    out.push_back(graph_case("attention", "graph_attention_key_lengths", [](CaseContext& ctx) {
        const Shape s = draw(ctx, {Dim::range(1, 4), Dim::range(1, 3), Dim::range(1, 80),
                                   Dim::range(0, 70), Dim::range(1, 41)});
        const int64_t b = s[0], kv = s[1], seq_q = s[2], seq_k = s[2] + s[3], d = s[4];
        Tensor q = input_tensor(ctx, DType::f32, {b, 2 * kv, seq_q, d});
        Tensor k = input_tensor(ctx, DType::f32, {b, kv, seq_k, d});
        Tensor v = input_tensor(ctx, DType::f32, {b, kv, seq_k, d});
        Tensor lengths = index_tensor(ctx, {b}, seq_k) + 1;
        return GraphInstance{{scaled_dot_product_attention(q, k, v, true) * 0.5 + q,
                              scaled_dot_product_attention(q, k, v, false, {}, &lengths)},
                             shape_text(s)};
    }));
}

}  // namespace

std::vector<Case> graph_cases() {
    std::vector<Case> out;
    smoke(out);
    elementwise(out);
    broadcasting(out);
    views(out);
    reductions(out);
    normalization(out);
    softmaxes(out);
    indexing(out);
    dtypes(out);
    contractions(out);
    return out;
}

}  // namespace kiln::conformance
