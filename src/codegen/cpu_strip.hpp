// cpu_strip: how many threads a CPU block's strip runs (codegen/cpu_threads.hpp's strips). A strip
// is one vector of 4-byte values (KILN_STRIP), which the C++ compiler vectorizes as one lane a
// thread; where a thread loop loads 1-byte values (int8 weights), GCC sizes the whole loop by the
// narrowest type, so a 16-thread strip reads 16 bytes and does its f32 work in quarter vectors. A
// block that loads such values and carries few values per thread runs strips of KILN_BYTE_STRIP
// threads (a vector of bytes) instead: the same threads, so the same results, in wider vectors.
#pragma once

#include "codegen/cpu_threads.hpp"

namespace kiln::codegen {

// At most this many values carried per thread across thread loops (each a vector of registers
// at the byte strip: four vectors each).
inline constexpr int kMaxByteStripValues = 4;

// Whether the plan's block runs strips of KILN_BYTE_STRIP threads: it runs in strips, loads
// 1-byte values from global memory, keeps no per-thread arrays and at most kMaxByteStripValues
// per-thread locals.
bool byte_strips(const ThreadPlan& plan);

}  // namespace kiln::codegen
