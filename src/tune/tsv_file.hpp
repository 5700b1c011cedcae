// A device's autotune TSV on disk: read through a bounded buffer into its live table, appended
// one line at a time under an exclusive flock(), and compacted (rewritten with only its live
// lines, atomically, under the same lock) when dead lines dominate. Every open refuses a symbolic
// link and anything but a regular file (a directory, a FIFO, a device).
#pragma once

#include <filesystem>
#include <string>

#include "tune/tsv.hpp"

namespace kiln::tune {

// Reads the TSV at `path` into `table`. Returns why it cannot be used ("is a symbolic link",
// "is a FIFO", a read error), or "" (a missing file reads as empty).
std::string read_tsv(const std::filesystem::path& path, TsvTable& table);

// Appends `line` with one write() on an O_APPEND descriptor under the file's lock; a line left
// torn by a writer that died mid-line is ended with a newline first. Returns an error text or "".
std::string append_tsv_line(const std::filesystem::path& path, const std::string& line);

// Under the file's lock, re-reads it into `table` and, when its dead lines still dominate,
// replaces it with its live lines (write to a temporary, rename). Returns an error text or "".
std::string compact_tsv(const std::filesystem::path& path, TsvTable& table);

// Whether `path` is a TSV as kiln writes them: a regular file, empty or with a well-formed first
// line (so `kiln cache clear` removes nothing else).
bool looks_like_tsv(const std::filesystem::path& path);

}  // namespace kiln::tune
