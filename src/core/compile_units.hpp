// Compile units a program file carries (kiln/program.hpp's save and load): kernels compiled in
// units whose split depends on the kernels alone (not on the host's threads or on what this
// process has compiled before), so that the machine that loads a file forms the same units, finds
// each unit's key among the file's and loads its binary instead of compiling.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/compile.hpp"

namespace kiln {

// One compile unit's binary under its cache key (a digest of the unit's source, the device's
// toolchain, kiln's version and the optimizer switch).
struct UnitBinary {
    std::string key;
    std::vector<uint8_t> binary;
};

// The kernels compiled in units of a fixed size (kernels listed twice compiled once), each unit's
// binary taken from `given` where its key is there, else from the disk cache or the compiler.
// `used`, where given, receives every unit's key and binary in order.
std::vector<std::shared_ptr<CompiledKernel>> compile_portable(Device& device,
                                                              std::span<const ir::Kernel> kernels,
                                                              const CompileOptions& options,
                                                              std::span<const UnitBinary> given,
                                                              std::vector<UnitBinary>* used);

}  // namespace kiln
