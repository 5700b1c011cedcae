// The cache's trust rule: kiln reads and writes only directories that are the user's own. A
// directory it creates gets mode 0700; one that exists must be a directory owned by the effective
// user and not writable by group or others, or kiln leaves it alone (kernels compile uncached,
// tuning stays in memory) after one warning naming it.
#pragma once

#include <filesystem>
#include <string>

namespace kiln::cache {

// Why `dir` may not be trusted ("owned by uid 65534, not by uid 0", "writable by others", "not a
// directory"), or "" when it is the user's own or does not exist (yet).
std::string private_dir_problem(const std::filesystem::path& dir);

// Whether kiln may use `dir`: true when private_dir_problem is "". Otherwise warns once per
// process per directory ("... kept in memory only") and returns false.
bool trusted_dir(const std::filesystem::path& dir);

// Creates `dir` and its missing parents with mode 0700 (existing ones are left as they are).
// Returns why it could not ("cannot create ...: Not a directory"), or "".
std::string make_private_dir(const std::filesystem::path& dir);

}  // namespace kiln::cache
