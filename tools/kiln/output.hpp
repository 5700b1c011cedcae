// Checked output for the kiln tool: a file it writes (--json, --report, --trace) or standard
// output, with a kiln::Error naming where a write failed (a full disk, a closed file), so that
// no command exits 0 having lost what it printed.
#pragma once

#include <string>
#include <string_view>

namespace kiln::cli {

// Writes `text` to the file at `path` (created or truncated), or to standard output where
// `path` is empty, and checks every step (open, write, flush, close).
void write_output(const std::string& path, std::string_view text);

// Flushes standard output and fails if any write to it failed, those of fmt::print included.
// main() calls it after every command.
void check_stdout();

}  // namespace kiln::cli
