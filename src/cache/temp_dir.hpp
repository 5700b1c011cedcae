// Private working directories under $TMPDIR (else /tmp) for compiles run in other processes: named
// <prefix><pid>-XXXXXX, created 0700 and removed with their contents when done. A process killed
// meanwhile leaves its directory behind; the first TempDir a process makes for a prefix removes
// that prefix's stale ones (this user's, whose process is gone, see writer_is_stale).
#pragma once

#include <filesystem>
#include <string>

namespace kiln::cache {

class TempDir {
  public:
    // `prefix` like "kiln-cpu-"; `what` names the user in an error ("CPU backend").
    TempDir(const std::string& prefix, const std::string& what);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
};

// The directory TempDirs go in: $TMPDIR, else /tmp.
std::filesystem::path temp_root();

// Removes the stale directories of `prefix` in temp_root(): <prefix><pid>-XXXXXX whose writer is
// stale, and <prefix>XXXXXX (a naming without the pid) older than kStaleAge. Returns how many.
int remove_stale_temp_dirs(const std::string& prefix);

}  // namespace kiln::cache
