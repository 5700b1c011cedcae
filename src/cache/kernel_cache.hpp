// The on-disk cache of compiled kernels: <root>/kernels/<device-id>/<key>.bin, one file per
// binary, written to a temporary file and renamed into place, with a header holding the
// payload's size and XXH3 checksum so a truncated or corrupted entry is detected, removed and
// rebuilt. A directory that cannot be written makes kiln work uncached, with one warning.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::cache {

class KernelCache {
  public:
    explicit KernelCache(std::filesystem::path root);  // root: <cache_root>/kernels

    std::optional<std::vector<uint8_t>> load(const std::string& device_id, const std::string& key);
    void store(const std::string& device_id, const std::string& key,
               std::span<const uint8_t> binary);
    // Saves the source of a failed compile for the user to read; returns its path ("" if none).
    std::string save_failed_source(const std::string& device_id, const std::string& key,
                                   const std::string& suffix, const std::string& source);
    std::filesystem::path entry_path(const std::string& device_id, const std::string& key) const;
    const std::filesystem::path& root() const { return root_; }

    uint64_t corrupt_entries() const { return corrupt_; }

  private:
    std::filesystem::path root_;
    uint64_t corrupt_ = 0;
};

// The process's kernel cache, rooted at cache_root()/kernels (re-read when KILN_CACHE_DIR changes).
KernelCache& process_kernel_cache();

}  // namespace kiln::cache
