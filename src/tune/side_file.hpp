// Small files kiln keeps beside a device's autotune TSV (<root>/<device-id>.<kind>, e.g. the cost
// model's "facts"): read whole through the TSV's opening rules (no symbolic link, nothing but a
// regular file, never blocking) and a size cap, written atomically, and marked as kiln's by a
// first line "# kiln <kind>" so that `kiln cache clear` removes nothing else.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace kiln::tune {

inline constexpr size_t kSideFileMax = size_t{64} << 10;

// Why the path cannot hold a side file ("is a FIFO", "is a symbolic link", ...), or "" when it is
// a regular file or absent.
std::string side_file_problem(const std::filesystem::path& path);

// Reads the side file of `kind` at `path` into `text` (its first line removed). Returns why it
// cannot be used (see side_file_problem; "is larger than N bytes"; a read error), or "" with
// `found` telling whether a file of kiln's with that first line was there.
std::string read_side_file(const std::filesystem::path& path, const std::string& kind,
                           std::string& text, bool& found);

// Replaces the file at `path` with the marker line and `text` (write to a temporary, rename;
// mode 0600; the directory must exist). Returns an error text or "".
std::string write_side_file(const std::filesystem::path& path, const std::string& kind,
                            const std::string& text);

// Whether `path` is a side file of `kind` as kiln writes them.
bool looks_like_side_file(const std::filesystem::path& path, const std::string& kind);

}  // namespace kiln::tune
