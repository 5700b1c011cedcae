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
#include "kiln/tune.hpp"

namespace kiln::ops {

// The kernel built by `build` for `key` (built once per process).
const ir::Kernel& memo_kernel(const std::string& key, const std::function<ir::Kernel()>& build);
// Its identity on `backend` (kiln::kernel_identity: the variant's part of the tuner's digest),
// computed once per process and backend.
const std::string& memo_identity(const std::string& key, const std::function<ir::Kernel()>& build,
                                 Backend backend);
// The variant table of a set (kiln::VariantTable: names, and the identities on `backend` of the
// kernels they launch, checked and digested once): `variants()` gives each variant's name and
// its kernel's memo key and builder, in order. Built once per (set_key, backend), since a tuner
// hit must cost microseconds; the table lives as long as the process.
struct NamedKernel {
    std::string name, key;
    std::function<ir::Kernel()> build;
};
const VariantTable& memo_variant_table(const std::string& set_key, Backend backend,
                                       std::string_view op,
                                       const std::function<std::vector<NamedKernel>()>& variants);
// It compiled for `device` (compiled once per device; compile() caches on disk too).
std::shared_ptr<CompiledKernel> memo_compiled(Device& device, const std::string& key,
                                              const std::function<ir::Kernel()>& build);

}  // namespace kiln::ops
