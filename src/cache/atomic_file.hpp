// Whole-file writes that readers never see half done: the bytes go to a temporary file in the same
// directory, ".<name>.<pid>.<random hex>.tmp", which is synced and renamed over the target. A
// writer killed before the rename leaves its temporary behind; the next process that uses the
// directory removes the stale ones.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

namespace kiln::cache {

// Writes the parts, in order, to `path` atomically (mode 0600; the directory must exist).
// Returns an error text, or "" on success.
std::string write_atomic(const std::filesystem::path& path,
                         std::initializer_list<std::span<const uint8_t>> parts);

// The file a temporary of write_atomic's naming scheme was for, and its writer's pid.
struct Temporary {
    std::string target;
    pid_t writer = 0;
};
std::optional<Temporary> parse_temporary(const std::string& name);

// A leftover of a writer that no longer runs: its pid is gone and it is older than a minute
// (so a live writer in another pid namespace is never touched), or it is older than an hour.
bool writer_is_stale(pid_t pid, std::filesystem::file_time_type modified);
inline constexpr auto kStaleAge = std::chrono::hours(1);

// Whether `path` is a temporary of write_atomic's naming scheme, a regular file of this user's,
// whose writer is stale.
bool is_stale_temporary(const std::filesystem::path& path);

// Removes write_atomic's stale temporaries in `dir`. Returns how many it removed.
int remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace kiln::cache
