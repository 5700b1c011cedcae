// check_bounds: checked mode (KILN_CHECK_BOUNDS). Runs last on a lowered kernel (after
// lower_folds and simplify) and guards every memory access — loads, stores, vector loads and
// stores of buffers, shared tiles and per-thread arrays — against its memory's length (a buffer's
// launch length; a tile's or array's size):
//   - a load out of range is not made; it reads 0 of its type instead;
//   - a store (or vector access) out of range is skipped (a vector load's locals become 0);
// and either records the access in the kernel's fault record, a u32 buffer the pass adds as the
// last parameter. The first fault claims the record with an atomic compare-and-swap of word 0
// (on every backend), so the record holds one whole fault; later ones leave it alone.
//
// An access in an arm of a select or on the right of && / || is checked only where it is
// evaluated: its check records a fault only where the conditions leading to it hold (a guarded
// load such as select(i < n, x[i], 0) never faults for i >= n), even if the code generator
// evaluates it earlier. A load the statement makes wherever it runs (outside every such arm and
// side) is checked once: its uses in arms, and the statement's other loads of the same element,
// are that load, so a tree of selects over x[i] (a math function) keeps one x[i] and one check.
//
// Accesses that ranges.hpp proves in range (an index below the length by an enclosing if or the
// loop bounds, a constant or thread-index index into a tile, ...) keep no check. Some proofs hold
// only where the i32 positions of the kernel (block_index * block_size + thread_index) do not
// wrap, i.e. for grids of at most 2^31 / block_size blocks: such an access keeps a test of the
// grid instead of its own (a bool the kernel computes once, at its start), and in a larger grid
// is skipped; the launch then faults as kGridSite (the grid as the index, the largest grid + 1
// as the length).
#pragma once

#include <array>
#include <cstdint>

#include "kiln/ir.hpp"

namespace kiln::ir {

// The fault record: kFaultWords u32 words, all 0 while no access has faulted.
inline constexpr int kFaultWords = 8;
enum FaultWord : int {
    fault_site = 0,      // encode_site() of the access; 0: no fault
    fault_index_lo = 1,  // the index, as 64 bits
    fault_index_hi = 2,
    fault_length_lo = 3,  // the memory's length in elements, as 64 bits
    fault_length_hi = 4,
    fault_block = 5,  // the block and thread that made the access
    fault_thread = 6,
};

// One access, as the fault record names it.
struct AccessSite {
    MemRef mem;
    bool store = false;
    int width = 1;  // elements: 1, or 2 / 4 for vector accesses
};
uint32_t encode_site(const AccessSite& site);  // never 0
AccessSite decode_site(uint32_t code);
// The site of a launch whose grid is too large for the kernel's proofs (decode_site does not
// apply to it).
inline constexpr uint32_t kGridSite = (1u << 31) | (3u << 20);

struct BoundsCheckCounts {
    // Indexed by MemSpace: global, shared, local.
    std::array<int, 3> accesses{};     // every load, store and vector access
    std::array<int, 3> checked{};      // those that keep a check of their index
    std::array<int, 3> grid_tested{};  // proved in range where positions fit in i32: they keep
                                       // a test of the grid (the rest keep no test at all)
};

struct CheckedKernel {
    Kernel kernel;  // the input with its checks and the fault record parameter
    BoundsCheckCounts counts;
};

CheckedKernel check_bounds(const Kernel& lowered);

}  // namespace kiln::ir
