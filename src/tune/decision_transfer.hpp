// Tuning decisions moved between machines: `kiln cache export` writes the winners a Tuner holds
// for some devices into one file, `kiln cache import` records a file's winners into a Tuner (so a
// fleet of one device model ships pre-tuned). The file is text:
//   # kiln tuning decisions 1
//   <device id>\t<op>\t<key>\t<winner>
//   ...
// Keys carry the digest of their variant set (kiln/tune.hpp), so a decision exported by another
// kiln version, or for code that changed since, never matches and is simply tuned again; a winner
// that is no longer offered is tuned again too. An import reads the whole file first and records
// nothing unless every line is well formed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/tune.hpp"

namespace kiln::tune {

inline constexpr const char* kDecisionsHeader = "# kiln tuning decisions 1";
inline constexpr uint64_t kMaxDecisionsFileBytes = uint64_t{64} << 20;

struct TransferCount {
    size_t devices = 0;    // device ids with at least one decision in the file
    size_t decisions = 0;  // lines written, or read
    size_t recorded = 0;   // import only: decisions the tuner did not already hold
};

// Writes the live decisions of each device id into `file` atomically (mode 0600; the directory
// must exist). kiln::Error when it cannot be written.
TransferCount export_decisions(Tuner& tuner, const std::vector<std::string>& device_ids,
                               const std::filesystem::path& file);

// Reads `file` (a regular file of at most kMaxDecisionsFileBytes, never through a symbolic link)
// and records its decisions that differ from the tuner's. kiln::Error naming the file and the
// first bad line (a wrong header, a line without its newline, fields missing, empty or with a
// carriage return, a device id that is not one) before anything is recorded.
TransferCount import_decisions(Tuner& tuner, const std::filesystem::path& file);

}  // namespace kiln::tune
