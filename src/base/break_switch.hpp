// Test-only switches that break the planner (src/plan/kinds/) and matmul on purpose, so the
// conformance sweep can show it catches what they break. KILN_CONFORMANCE_BREAK holds a
// comma-separated list of names:
//   map_tiling        a map launch with several elements per thread writes only the first
//   fold_order        a row launch that keeps its row in registers folds each lane's elements
//                     last to first (not the canonical order)
//   matmul_tile_edge  a matmul tile that straddles the last column leaves that column unwritten
// Unset (always, outside tests of the sweep itself): nothing is broken.
#pragma once

#include <string_view>

namespace kiln {

// Whether `what` is named in KILN_CONFORMANCE_BREAK now (read at each call, so a test can set
// and clear it).
bool break_switch(std::string_view what);

}  // namespace kiln
