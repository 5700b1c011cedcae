// Per-process memo of the kernels an op's variants launch, keyed by a text that names every
// comptime value ("rms_norm/f32/n=4096/warp_b256"), so a tuner hit neither rebuilds IR nor
// rehashes it: it looks up a compiled kernel and launches it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/ir.hpp"

namespace kiln::ops {

// The kernel built by `build` for `key` (built once per process).
const ir::Kernel& memo_kernel(const std::string& key, const std::function<ir::Kernel()>& build);
// Its identity on `backend` (kiln::kernel_identity: the variant's part of the tuner's digest),
// computed once per process and backend.
const std::string& memo_identity(const std::string& key, const std::function<ir::Kernel()>& build,
                                 Backend backend);
// The identities on `backend` of a variant set's kernels, in order: `kernels()` gives each one's
// memo key and builder. Looked up once per (set_key, backend), since a tuner hit must cost
// microseconds.
using KeyedBuilder = std::pair<std::string, std::function<ir::Kernel()>>;
const std::vector<std::string>& memo_identities(
    const std::string& set_key, Backend backend,
    const std::function<std::vector<KeyedBuilder>()>& kernels);
// It compiled for `device` (compiled once per device; compile() caches on disk too).
std::shared_ptr<CompiledKernel> memo_compiled(Device& device, const std::string& key,
                                              const std::function<ir::Kernel()>& build);

}  // namespace kiln::ops
