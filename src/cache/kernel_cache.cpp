// KernelCache: keyed, checksummed entries in private directories; corruption recovery; clearing
// only what kiln wrote.
#include "cache/kernel_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "cache/atomic_file.hpp"
#include "cache/paths.hpp"
#include "cache/private_dir.hpp"
#include "cache/regular_file.hpp"
#include "kiln/error.hpp"

namespace kiln::cache {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '2'};
constexpr char kOldMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '1'};
// Followed by key_size bytes of the full key, then size bytes of payload.
struct Header {
    char magic[8];
    uint64_t key_size;
    uint64_t size;
    uint64_t checksum;  // XXH3 of the key bytes followed by the payload
};

// The text an entry's header carries: everything that names the entry.
std::string full_key(const std::string& device_id, const std::string& key) {
    return device_id + '\n' + key;
}

uint64_t checksum(std::string_view key, std::span<const uint8_t> payload) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, key.data(), key.size());
    XXH3_64bits_update(state, payload.data(), payload.size());
    const uint64_t sum = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return sum;
}

// An entry an older kiln wrote (rebuilt in today's format when read).
bool is_older_entry(const std::string& data) {
    return data.size() >= sizeof kOldMagic && std::memcmp(data.data(), kOldMagic, 8) == 0;
}

// Why an entry's bytes are not a whole entry ("" when they are, with `stored_key` set to the
// full key it was written for and `payload` to the binary).
std::string parse_entry(const std::string& data, std::string_view& stored_key,
                        std::span<const uint8_t>& payload) {
    Header h{};
    if (data.size() < sizeof(Header)) return "is corrupt (shorter than its header)";
    std::memcpy(&h, data.data(), sizeof h);
    const size_t rest = data.size() - sizeof(Header);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key_size > rest ||
        h.size != rest - h.key_size)
        return "is corrupt (its header does not match its size)";
    stored_key = std::string_view(data).substr(sizeof(Header), h.key_size);
    payload = std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size())
                  .subspan(sizeof(Header) + h.key_size);
    if (checksum(stored_key, payload) != h.checksum) return "is corrupt (checksum mismatch)";
    return "";
}

// Why an entry's bytes are not a whole entry for `expected_key` ("" when they are, with
// `payload` set to the binary).
std::string check_entry(const std::string& data, const std::string& expected_key,
                        std::span<const uint8_t>& payload) {
    std::string_view stored_key;
    if (std::string why = parse_entry(data, stored_key, payload); !why.empty()) return why;
    if (stored_key != expected_key) {
        auto shown = [](std::string_view text) {
            std::string out(text);
            std::replace(out.begin(), out.end(), '\n', ' ');
            return out;
        };
        return fmt::format("was written for another kernel ({}; expected {})", shown(stored_key),
                           shown(expected_key));
    }
    return "";
}

bool is_hex_key(std::string_view text) {
    if (text.size() != 16) return false;
    for (char c : text)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// Whether `name` is <key><suffix> for one of `suffixes`.
bool is_key_with_suffix(std::string_view name, std::initializer_list<std::string_view> suffixes) {
    for (std::string_view suffix : suffixes)
        if (name.ends_with(suffix) && is_hex_key(name.substr(0, name.size() - suffix.size())))
            return true;
    return false;
}

bool is_plain_file(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
}

// Whether the file at `path` (named <key>.bin) is an entry kiln wrote for that key: an older
// kiln's (its magic), or one that parses whole and carries the key its name gives.
bool is_entry_file(const fs::path& path) {
    std::string why;
    const FileDescriptor fd = open_regular(path, O_RDONLY, 0, why);
    std::string data;
    if (!fd || !read_whole(fd.get(), data).empty()) return false;
    if (is_older_entry(data)) return true;
    std::string_view stored_key;
    std::span<const uint8_t> payload;
    return parse_entry(data, stored_key, payload).empty() &&
           stored_key.ends_with('\n' + path.stem().string());
}

// What kiln writes in a device's directory: entries (checked by content) and notes.
bool is_entry_or_note(const fs::path& path) {
    const std::string name = path.filename().string();
    return (is_entry_name(name) && is_entry_file(path)) || is_note_name(name);
}

// A failed compile's saved source: <key><suffix> for one of the backends' suffixes.
bool is_failed_source(const fs::path& path) {
    return is_key_with_suffix(path.filename().string(), {".cpp", ".cu", ".cl"});
}

bool is_plain_dir(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Removes from `dir` the files `ours` accepts (and kiln's stale temporaries), records the rest
// in `left_alone`, and removes `dir` when it is left empty. Returns the files removed.
uint64_t clear_dir(const fs::path& dir, bool (*ours)(const fs::path&),
                   std::vector<fs::path>& left_alone, bool is_device_dir) {
    uint64_t removed = 0;
    std::error_code ec;
    for (const auto& path : directory_entries(dir)) {
        const std::string name = path.filename().string();
        const bool kiln_file = (is_plain_file(path) && ours(path)) || is_stale_temporary(path);
        if (kiln_file && fs::remove(path, ec))
            ++removed;
        else if (is_device_dir && name == "failed" && is_plain_dir(path))
            removed += clear_dir(path, is_failed_source, left_alone, false);
        else
            left_alone.push_back(path);
    }
    ::rmdir(dir.c_str());  // only succeeds when nothing is left
    return removed;
}

}  // namespace

bool is_entry_name(const std::string& name) {
    return is_key_with_suffix(name, {".bin"});
}

bool is_note_name(const std::string& name) {
    return is_key_with_suffix(name, {kNoteSuffix, kIndexSuffix});
}

bool is_crash_note_name(const std::string& name) {
    return is_key_with_suffix(name, {kNoteSuffix});
}

KernelCache::KernelCache(fs::path cache_root)
    : cache_root_(std::move(cache_root)),
      root_(cache_root_.empty() ? fs::path() : cache_root_ / "kernels") {}

fs::path KernelCache::entry_path(const std::string& device_id, const std::string& key) const {
    if (root_.empty()) return {};
    return root_ / safe_component(device_id) / (safe_component(key) + ".bin");
}

bool KernelCache::usable(const fs::path& device_dir) {
    if (root_.empty() || !trusted_dir(cache_root_) || !trusted_dir(root_) ||
        !trusted_dir(device_dir))
        return false;
    std::lock_guard lock(mutex_);
    if (swept_.insert(device_dir).second) {
        remove_stale_temporaries(device_dir);
        remove_stale_temporaries(device_dir / "failed");
    }
    return true;
}

std::optional<std::vector<uint8_t>> KernelCache::load(const std::string& device_id,
                                                      const std::string& key) {
    const auto path = entry_path(device_id, key);
    std::string data;
    std::string why = read_file(path, data);
    if (why == kAbsent) return std::nullopt;
    if (is_older_entry(data)) {
        std::error_code ec;  // an older kiln's entry: rebuilt in today's format
        fs::remove(path, ec);
        return std::nullopt;
    }
    std::span<const uint8_t> payload;
    if (why.empty()) why = check_entry(data, full_key(device_id, key), payload);
    if (!why.empty()) {
        ++corrupt_;
        warn_once("corrupt:" + path.string(),
                  fmt::format("kernel cache entry {} {}; rebuilding it", path.string(), why));
        std::error_code ec;
        fs::remove(path, ec);
        return std::nullopt;
    }
    return std::vector<uint8_t>(payload.begin(), payload.end());
}

std::string KernelCache::read_file(const fs::path& path, std::string& data) {
    if (!usable(path.parent_path())) return kAbsent;
    std::string why;
    const FileDescriptor fd = open_regular(path, O_RDONLY, 0, why);
    if (!fd) return why.empty() ? kAbsent : why;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        // Not written by this user: replaced by a fresh one, never read.
        warn_once("untrusted-entry:" + root_.string(),
                  fmt::format("kernel cache file {} is not the user's own (owner uid {}, mode "
                              "{:o}); kiln does not read it",
                              path.string(), st.st_uid, st.st_mode & 07777));
        return kAbsent;
    }
    return read_whole(fd.get(), data);
}

void KernelCache::write_file(const fs::path& path,
                             std::initializer_list<std::span<const uint8_t>> parts) {
    // Nothing is created under a directory that is not the user's own.
    if (!usable(path.parent_path())) return;
    std::string err = make_private_dir(path.parent_path());
    if (err.empty() && !usable(path.parent_path())) return;
    if (err.empty()) err = write_atomic(path, parts);
    if (!err.empty())
        warn_once("unwritable:" + root_.string(),
                  fmt::format("kernel cache under {} is not writable ({}); compiled kernels are "
                              "kept in memory only",
                              root_.string(), err));
}

fs::path KernelCache::note_path(const std::string& device_id, const std::string& key,
                                const char* suffix) const {
    if (root_.empty()) return {};
    return root_ / safe_component(device_id) / (safe_component(key) + suffix);
}

std::optional<std::string> KernelCache::load_note(const std::string& device_id,
                                                  const std::string& key, const char* suffix) {
    std::string text;
    if (root_.empty() || !read_file(note_path(device_id, key, suffix), text).empty())
        return std::nullopt;
    return text;
}

void KernelCache::store_note(const std::string& device_id, const std::string& key,
                             const std::string& text, const char* suffix) {
    if (root_.empty()) return;
    write_file(note_path(device_id, key, suffix),
               {{reinterpret_cast<const uint8_t*>(text.data()), text.size()}});
}

void KernelCache::store(const std::string& device_id, const std::string& key,
                        std::span<const uint8_t> binary) {
    if (root_.empty()) return;
    const std::string text = full_key(device_id, key);
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.key_size = text.size();
    h.size = binary.size();
    h.checksum = checksum(text, binary);
    write_file(entry_path(device_id, key),
               {{reinterpret_cast<const uint8_t*>(&h), sizeof h},
                {reinterpret_cast<const uint8_t*>(text.data()), text.size()},
                binary});
}

std::string KernelCache::save_failed_source(const std::string& device_id, const std::string& key,
                                            const std::string& suffix, const std::string& source) {
    const auto bytes = std::span(reinterpret_cast<const uint8_t*>(source.data()), source.size());
    if (!root_.empty()) {
        const auto dir = root_ / safe_component(device_id) / "failed";
        const auto path = dir / (safe_component(key) + suffix);
        if (usable(dir.parent_path()) && trusted_dir(dir) && make_private_dir(dir).empty() &&
            write_atomic(path, {bytes}).empty())
            return path.string();
    }
    const auto path =
        fs::temp_directory_path() / fmt::format("kiln-failed-{}{}", safe_component(key), suffix);
    if (write_atomic(path, {bytes}).empty()) return path.string();
    return "";
}

uint64_t KernelCache::clear(const std::string& device_id, std::vector<fs::path>& left_alone) {
    if (root_.empty()) return 0;
    for (const auto& dir : {cache_root_, root_})
        if (const std::string problem = private_dir_problem(dir); !problem.empty())
            fail("cache clear: {} {}; kiln clears only a directory that is the user's own",
                 dir.string(), problem);
    if (!device_id.empty()) {
        const auto dir = root_ / safe_component(device_id);
        if (!is_plain_dir(dir)) return 0;
        if (!private_dir_problem(dir).empty()) {
            left_alone.push_back(dir);
            return 0;
        }
        return clear_dir(dir, is_entry_or_note, left_alone, true);
    }
    uint64_t removed = 0;
    for (const auto& path : directory_entries(root_)) {
        const std::string name = path.filename().string();
        if (is_plain_dir(path) && safe_component(name) == name && private_dir_problem(path).empty())
            removed += clear_dir(path, is_entry_or_note, left_alone, true);
        else
            left_alone.push_back(path);
    }
    return removed;
}

KernelCache& process_kernel_cache() {
    static std::mutex mutex;
    static std::unique_ptr<KernelCache> cache;
    std::lock_guard lock(mutex);
    const auto root = cache_root();
    const auto kernels = root.empty() ? fs::path() : root / "kernels";
    if (!cache || cache->root() != kernels) cache = std::make_unique<KernelCache>(root);
    return *cache;
}

}  // namespace kiln::cache
