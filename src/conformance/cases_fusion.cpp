// The fusion area: random small graphs built from the run's seed (maps, broadcasts of keepdim
// reductions, views), resolved fused and compared with the graph oracle and with the same graph
// resolved unfused (every op its own plan, each intermediate resolved), so a fusion that changes
// a bit shows against both.
#include <fmt/format.h>

#include "conformance/case.hpp"

namespace kiln::conformance {

namespace {

// One random graph over inputs of shape `s`: `steps` ops, each on earlier values; with
// `resolve_each`, every value is resolved as soon as it is built (the unfused evaluation).
// The generator draws only from `rng`, so two calls with equal seeds build the same graph.
std::vector<Tensor> random_graph(Rng rng, const std::vector<Tensor>& inputs, int steps,
                                 bool resolve_each) {
    std::vector<Tensor> values = inputs;
    auto pick = [&]() -> Tensor { return values[rng() % values.size()]; };
    const int64_t last = static_cast<int64_t>(inputs[0].rank()) - 1;
    for (int i = 0; i < steps; ++i) {
        Tensor a = pick(), b = pick();
        Tensor v;
        switch (rng() % 14) {
            case 0:
                v = a + b;
                break;
            case 1:
                v = a * b;
                break;
            case 2:
                v = a - b * 0.5;
                break;
            case 3:
                v = tanh(a);
                break;
            case 4:
                v = exp(minimum(a, b));
                break;
            case 5:
                v = sigmoid(a) * b;
                break;
            case 6:
                v = a - max(a, {last}, true);
                break;
            case 7:
                v = a / (sum(abs(b), {last}, true) + 1.0);
                break;
            case 8:
                v = softmax(a, last);
                break;
            case 9:
                v = where(a > b, a, square(b));
                break;
            case 10:
                v = gelu(a) + mean(b, {0}, true);
                break;
            case 11:
                v = sqrt(abs(a) + 1e-3);
                break;
            case 12:
                v = rms_norm(a, Tensor::full({a.size(last)}, 1.5, DType::f32, a.device()));
                break;
            default:
                v = maximum(a, b) * 2.0;
                break;
        }
        if (resolve_each) v.resolve();
        values.push_back(v);
    }
    // Outputs: the last value and one earlier derived value.
    std::vector<Tensor> outs{values.back()};
    if (values.size() > inputs.size() + 1) outs.push_back(values[inputs.size()] * 1.0);
    return outs;
}

}  // namespace

std::vector<Case> fusion_cases() {
    std::vector<Case> out;
    for (int steps : {4, 8}) {
        out.push_back(
            {"fusion", fmt::format("random_graph_{}_ops", steps), [steps](CaseContext& ctx) {
                 const Shape s = draw(ctx, {Dim::range(1, 37), Dim::range(1, 131)});
                 std::vector<Tensor> inputs;
                 for (int i = 0; i < 3; ++i) inputs.push_back(input_tensor(ctx, DType::f32, s));
                 const uint64_t graph_seed = ctx.rng();
                 // The unfused evaluation first, compared like every other member.
                 std::vector<Tensor> unfused = random_graph(Rng(graph_seed), inputs, steps, true);
                 resolve(unfused);
                 check_graph(ctx, [&](CaseContext&) {
                     return GraphInstance{
                         random_graph(Rng(graph_seed), inputs, steps, false),
                         shape_text(s) + fmt::format(" graph {:016x}", graph_seed)};
                 });
                 // The fused and unfused results, against each other.
                 std::vector<Tensor> fused = random_graph(Rng(graph_seed), inputs, steps, false);
                 resolve(fused);
                 std::vector<DType> dtypes;
                 std::vector<std::vector<uint8_t>> got, want;
                 for (size_t i = 0; i < fused.size(); ++i) {
                     dtypes.push_back(fused[i].dtype());
                     got.push_back(fused[i].to_host_bytes());
                     want.push_back(unfused[i].to_host_bytes());
                 }
                 Result r = ctx.base;
                 r.member = "fused vs unfused";
                 report_outputs(ctx, std::move(r), dtypes, got, want);
             }});
    }
    return out;
}

}  // namespace kiln::conformance
