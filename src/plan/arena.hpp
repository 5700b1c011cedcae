// arena: the memory a kept executable runs in, assigned by liveness. Each buffer the plan
// allocates (intermediates and outputs) gets a slot; nodes that never live at the same time share
// one, so a compiled program holds about the peak of its run, not the sum of its buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "plan/executable.hpp"

namespace kiln::plan {

struct ArenaPlan {
    std::vector<int> slot;  // per graph node: its slot, -1 for nodes the plan does not allocate
    std::vector<size_t> slot_bytes;  // each slot's size
    size_t bytes() const;            // all slots'
};

// Slots for e's allocated nodes: a node lives from the first launch that names it to the last; a
// slot freed after a launch serves nodes first named by a later one (the smallest free slot that
// fits, else a new one). Each of g's outputs has a slot no other node shares, kept to the end.
ArenaPlan plan_arena(const Executable& e, const GraphView& g);

// Resident buffers of one run: each allocated node a buffer of its dtype and size over its slot's
// memory (allocated here), the scratch buffers and the fault record of their own; leaves are left
// for the caller to bind.
RunBuffers allocate_arena(const Executable& e, const GraphView& g, const ArenaPlan& arena);

}  // namespace kiln::plan
