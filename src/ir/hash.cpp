// Structural hash: XXH3 of the complete printed IR.
#include "ir/hash.hpp"

#include <xxhash.h>

#include <fmt/format.h>

#include "ir/print.hpp"

namespace kiln::ir {

uint64_t structural_hash(const Kernel& kernel) {
    const std::string text = print(kernel);
    return XXH3_64bits(text.data(), text.size());
}

std::string hex(uint64_t value) {
    return fmt::format("{:016x}", value);
}

}  // namespace kiln::ir
