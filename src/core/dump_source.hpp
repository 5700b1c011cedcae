// KILN_DUMP_SOURCE=dir: every source kiln generates for a compile goes to dir, beside each
// kernel's IR, under names that say which kernels they hold. For reading what kiln compiled.
#pragma once

#include <span>
#include <string_view>

#include "kiln/device.hpp"
#include "kiln/ir.hpp"

namespace kiln {

// Writes, when KILN_DUMP_SOURCE is set: `<entry><tag>.<backend><suffix>` with `source` (a
// compile unit of several kernels is named after its first, `<entry>+<n more>...`) and
// `<entry>.ir` with each kernel's printed IR, where <entry> is the kernel's name and hash as in
// the source. A directory that cannot be written is warned about once; the compile goes on.
void dump_source(const Device& device, std::span<const ir::Kernel> kernels, std::string_view source,
                 std::string_view tag = "");

}  // namespace kiln
