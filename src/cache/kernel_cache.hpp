// The on-disk cache of compiled kernels: <cache root>/kernels/<device-id>/<key>.bin, one file per
// binary, written atomically (atomic_file.hpp). Each entry's header holds the full key it was
// written for (device id and key) and an XXH3 checksum of key and payload, so a truncated,
// corrupted or misplaced entry (another kernel's copied over it) is detected, removed and
// rebuilt. Only directories that are the user's own are used (private_dir.hpp); otherwise, and
// when a directory cannot be written, kiln works uncached after one warning. Beside the entries,
// notes (<key>.crash) remember verdicts under the same rules.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace kiln::cache {

inline constexpr const char* kNoteSuffix = ".crash";
// A note naming the unit that holds a kernel's entry (core/compile.cpp's index).
inline constexpr const char* kIndexSuffix = ".unit";

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

    // A short text kept beside the entries as <key><suffix> (kNoteSuffix: an OpenCL compiler's
    // crash verdict; kIndexSuffix: the unit holding a kernel), under the entries' rules: read
    // only when it and its directories are the user's own, written atomically, removed by
    // clear(). Nothing without a disk cache.
    std::optional<std::string> load_note(const std::string& device_id, const std::string& key,
                                         const char* suffix = kNoteSuffix);
    void store_note(const std::string& device_id, const std::string& key, const std::string& text,
                    const char* suffix = kNoteSuffix);
    std::filesystem::path note_path(const std::string& device_id, const std::string& key,
                                    const char* suffix = kNoteSuffix) const;
    const std::filesystem::path& root() const { return root_; }  // <cache_root>/kernels

    // Removes what kiln wrote for one device (every device when device_id is empty): entries
    // (files with an entry's name that parse as kiln's entry for that key), saved failed sources,
    // stale temporaries, then directories left empty. Anything else is left in place and its path
    // appended to `left_alone`. Returns how many files it removed. kiln::Error when the cache root
    // is not the user's own.
    uint64_t clear(const std::string& device_id, std::vector<std::filesystem::path>& left_alone);

    uint64_t corrupt_entries() const { return corrupt_; }

  private:
    // Whether the cache root, kernels/ and the device's directory may be used (each the user's
    // own or absent); removes the directory's stale temporaries the first time it is seen.
    bool usable(const std::filesystem::path& device_dir);
    // Reads a file of a device's directory if it may be trusted: "" with `data` filled, kAbsent
    // (no such file, or not the user's own: one warning), or why it cannot be read.
    std::string read_file(const std::filesystem::path& path, std::string& data);
    // Writes a file of a device's directory atomically, creating the directory private; warns
    // once when it cannot.
    void write_file(const std::filesystem::path& path,
                    std::initializer_list<std::span<const uint8_t>> parts);
    static constexpr const char* kAbsent = "(absent)";

    std::filesystem::path cache_root_, root_;
    std::mutex mutex_;
    std::set<std::filesystem::path> swept_;
    std::atomic<uint64_t> corrupt_ = 0;
};

// Whether `name` is one kiln gives an entry (16 lowercase hex digits, then ".bin"), a note (the
// same digits, then kNoteSuffix or kIndexSuffix), or a compiler's crash verdict (kNoteSuffix).
bool is_entry_name(const std::string& name);
bool is_note_name(const std::string& name);
bool is_crash_note_name(const std::string& name);

// The process's kernel cache, under cache_root() (re-read when KILN_CACHE_DIR changes).
KernelCache& process_kernel_cache();

}  // namespace kiln::cache
