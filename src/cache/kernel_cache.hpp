// The on-disk cache of compiled kernels: <cache root>/kernels/<device-id>/<key>.bin, one file per
// binary, written atomically (atomic_file.hpp). Each entry's header holds the full key it was
// written for (device id and key) and an XXH3 checksum of key and payload, so a truncated,
// corrupted or misplaced entry (another kernel's copied over it) is detected, removed and
// rebuilt. Only directories that are the user's own are used (private_dir.hpp); otherwise, and
// when a directory cannot be written, kiln works uncached after one warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace kiln::cache {

class KernelCache {
  public:
    // Entries under <cache_root>/kernels; an empty cache_root keeps nothing on disk.
    explicit KernelCache(std::filesystem::path cache_root);

    std::optional<std::vector<uint8_t>> load(const std::string& device_id, const std::string& key);
    void store(const std::string& device_id, const std::string& key,
               std::span<const uint8_t> binary);
    // Saves the source of a failed compile for the user to read; returns its path ("" if none).
    std::string save_failed_source(const std::string& device_id, const std::string& key,
                                   const std::string& suffix, const std::string& source);
    std::filesystem::path entry_path(const std::string& device_id, const std::string& key) const;
    const std::filesystem::path& root() const { return root_; }  // <cache_root>/kernels

    // Removes what kiln wrote for one device (every device when device_id is empty): entries,
    // saved failed sources, stale temporaries, then directories left empty. Anything else is
    // left in place and its path appended to `left_alone`. Returns how many files it removed.
    // kiln::Error when the cache root is not the user's own.
    uint64_t clear(const std::string& device_id, std::vector<std::filesystem::path>& left_alone);

    uint64_t corrupt_entries() const { return corrupt_; }

  private:
    // Whether the cache root, kernels/ and the device's directory may be used (each the user's
    // own or absent); removes the directory's stale temporaries the first time it is seen.
    bool usable(const std::filesystem::path& device_dir);

    std::filesystem::path cache_root_, root_;
    std::mutex mutex_;
    std::set<std::filesystem::path> swept_;
    std::atomic<uint64_t> corrupt_ = 0;
};

// Whether `name` is one kiln gives an entry: 16 lowercase hex digits and ".bin".
bool is_entry_name(const std::string& name);

// The process's kernel cache, under cache_root() (re-read when KILN_CACHE_DIR changes).
KernelCache& process_kernel_cache();

}  // namespace kiln::cache
