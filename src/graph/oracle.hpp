// The graph's oracle: a graph evaluated op by op in plain C++ on the host, one node at a time,
// every op by its definition (docs/graph.md) and every fold in its canonical order. It shares no
// code with the planner or the code generator: views map coordinates directly, maps apply the
// ops' formulas with kiln::host's twins of the transcendentals. Every plan, fused or not, on every
// schedule and device, must give these bits.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/node.hpp"

namespace kiln::graph {

// A tensor's elements on the host: floats widened to f32 (f16/bf16 already rounded to their
// type), integers and bools as int64.
struct HostTensor {
    DType dtype = DType::f32;
    Shape shape;
    std::vector<float> f;    // float dtypes
    std::vector<int64_t> i;  // integer dtypes and bool
    // The elements as the device stores them (row-major, size_of(dtype) bytes each).
    std::vector<uint8_t> bytes() const;
};

// Evaluates `outputs` (resolved nodes are read from their buffers). An index out of range in a
// gather or scatter is a kiln::Error, as on the devices.
std::vector<HostTensor> evaluate(const std::vector<NodeRef>& outputs);

}  // namespace kiln::graph
