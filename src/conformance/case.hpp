// What a conformance case is and what it gets to run: the device, the run's random source and a
// sink for its results. Cases live in one file per group of areas (cases_*.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "conformance/shapes.hpp"
#include "conformance/suite.hpp"
#include "kiln/tensor.hpp"

namespace kiln::conformance {

struct CaseContext {
    Device& device;
    int run = 0;
    uint64_t seed = 0;  // seed_of(case, run, suite seed): shapes and data derive from it
    bool sweep = false;
    Rng rng;
    Result base;  // area, name, run and device filled in; each result starts from it
    std::function<void(Result)> report;
};

struct Case {
    std::string area, name;
    std::function<void(CaseContext&)> run;
};

// The cases of each group (cases_graph.cpp, cases_fusion.cpp, cases_ops.cpp).
std::vector<Case> graph_cases();
std::vector<Case> fusion_cases();
std::vector<Case> op_cases();

// Draws a shape for this run and records it in ctx.base (so even a failure to build names it).
Shape draw(CaseContext& ctx, const std::vector<Dim>& dims);

// A graph case's tensors (built on ctx.device) and the shapes that name this run.
struct GraphInstance {
    std::vector<Tensor> outputs;
    std::string shape;
};
using GraphBuilder = std::function<GraphInstance(CaseContext&)>;

// Builds the graph, evaluates the graph oracle, resolves it (member "resolved") and, with
// ctx.sweep, runs every plan member through plan::sweep; reports one result per member.
void check_graph(CaseContext& ctx, const GraphBuilder& build);

// Compares one member's outputs (raw bytes, one per expected output) and reports the result.
void report_outputs(CaseContext& ctx, Result r, const std::vector<DType>& dtypes,
                    const std::vector<std::vector<uint8_t>>& got,
                    const std::vector<std::vector<uint8_t>>& want);

// Input data: `count` random elements of a dtype (raw bytes), or as a tensor on the device.
// Floats: finite values in
// [-range, range) or, with `specials`, kiln's edge values (NaN, infinities, -0, subnormals,
// extremes) mixed in; integers: uniform over the dtype; bools 0 or 1.
std::vector<uint8_t> random_bytes(CaseContext& ctx, DType dtype, size_t count,
                                  bool specials = false, float range = 4);
Tensor input_tensor(CaseContext& ctx, DType dtype, const Shape& shape, bool specials = false,
                    float range = 4);
// Integers in [0, bound) of dtype i32 (indices).
Tensor index_tensor(CaseContext& ctx, const Shape& shape, int64_t bound);

}  // namespace kiln::conformance
