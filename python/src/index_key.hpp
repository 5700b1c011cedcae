// x[key] and x[key] = value read their key the same way: parse_key turns ints, slices (any
// step), None, Ellipsis, index tensors (or lists or numpy arrays of ints) or a bool mask
// into one item per source axis, in order, with every axis of x named (Ellipsis and the axes
// after the last item become whole-axis items).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace kiln::python {

struct KeyItem {
    enum class Kind { whole, slice, integer, newaxis, index, mask };
    Kind kind = Kind::whole;
    int64_t axis = 0;  // the first axis of x it applies to (newaxis: the next one)
    int64_t start = 0, step = 1, count = 0;  // slice (count elements); integer: start
    Tensor tensor;                           // index (an integer dtype) or mask (bool)
};

struct Key {
    std::vector<KeyItem> items;
    std::string text;  // the key's repr, for messages
    // The first index or mask item, or -1; how many index items there are (a mask is alone).
    int advanced = -1;
    int indices = 0;
    // numpy's rule: with index tensors and ints apart (a slice or None between them), the
    // indices' axes go first in x[key] rather than in their place.
    bool advanced_first = false;
};

Key parse_key(const Tensor& x, nb::handle key);

// An index tensor for an axis of n elements: i8/u8 widened, negative entries from -n to -1
// counted from the end (others left for index_select to report).
Tensor index_for_axis(const Tensor& index, int64_t n);

}  // namespace kiln::python
