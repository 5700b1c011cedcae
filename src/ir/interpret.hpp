// interpret: runs a kernel's IR on the host, block after block, with kiln's scalar semantics
// (slot_ops.hpp) — an oracle for any kernel, and a second reading of the IR's meaning beside the
// emitter's. A block's threads run as loops split where they must meet (barriers, folds over
// several threads, warp shuffles), as the CPU backend runs them; the code between two such
// points runs thread after thread. A fold computes the canonical order directly: lanes of
// chunks, each element's body run in the thread that owns its lane, then the halving tree.
// Kernels lowered by lower_folds (shuffles, exchange tiles) run too.
//
// Checked as it runs, each a kiln::Error naming the kernel, block and thread: a store out of
// range, a load out of range whose value is used (a select or && / || that does not take it is
// fine, as in C), and a condition or loop bound that differs between the threads meeting at a
// barrier inside it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/slot_ops.hpp"
#include "kiln/ir.hpp"

namespace kiln::ir {

// A buffer parameter's elements on the host.
struct HostMemory {
    uint8_t* data;
    size_t count;
};

// Runs blocks [0, grid) of `kernel` (verified). `buffers` holds one entry per buffer parameter
// and `scalars` one slot per scalar parameter, both in parameter order.
void interpret(const Kernel& kernel, int64_t grid, std::span<const HostMemory> buffers,
               std::span<const Slot> scalars);

}  // namespace kiln::ir
