// Checked node builders the public tensor ops are written with: each checks its operands,
// names the op and the shapes in its kiln::Error, and returns the new node.
#pragma once

#include <string>
#include <vector>

#include "graph/node.hpp"

namespace kiln::graph {

// The device every input lives on; kiln::Error naming `op` when they differ or one is empty.
Device* common_device(const std::vector<const Node*>& inputs, const char* op);

// A constant of `shape` (every element `value` converted to dtype); kiln::Error naming `op` when
// an integer or bool dtype cannot hold `value` exactly.
NodeRef constant_node(double value, DType dtype, const Shape& shape, Device* device,
                      const char* op);

// `x` seen with `shape` by numpy broadcasting (an Expand view, or x itself).
NodeRef broadcast_node(const NodeRef& x, const Shape& shape, const char* op);

// Elementwise op over inputs broadcast to their common shape, with result dtype `out`.
NodeRef map_node(MapOp op, DType out, std::vector<NodeRef> inputs);

// A view of x; `shape` is the result's shape.
NodeRef view_node(ViewKind kind, const NodeRef& x, Shape shape, std::vector<int64_t> a,
                  std::vector<int64_t> b = {}, double pad_value = 0);

// x reshaped (no checks beyond the element count).
NodeRef reshape_node(const NodeRef& x, const Shape& shape);

// The fold of x over `axes` (sorted, unique) in x's dtype; the result drops those axes.
NodeRef fold_node(FoldKind kind, const NodeRef& x, const std::vector<int>& axes);

// x's shape with `axes` set to 1 (keepdim) or removed.
Shape reduced_shape(const Shape& shape, const std::vector<int>& axes, bool keepdim);

// Nodes of a composite op get its label, for profiles (those already labelled keep theirs).
void label_graph(const NodeRef& root, const std::vector<NodeRef>& inputs, const std::string& label);

}  // namespace kiln::graph
