// KernelCache: checksummed entries, atomic writes, corruption recovery.
#include "cache/kernel_cache.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "cache/paths.hpp"
#include "kiln/error.hpp"

namespace kiln::cache {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '1'};
struct Header {
    char magic[8];
    uint64_t size;
    uint64_t checksum;
};

// Writes `bytes` to `path` atomically: a unique temporary file in the same directory, fsync,
// rename. Returns an error text, or "" on success.
std::string write_atomic(const std::filesystem::path& path, std::span<const uint8_t> head,
                         std::span<const uint8_t> body) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message());
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const auto tmp = path.parent_path() /
                     fmt::format(".{}.{}.{:x}.tmp", path.filename().string(), getpid(), rng());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno));
    bool ok = true;
    for (auto part : {head, body}) {
        size_t done = 0;
        while (ok && done < part.size()) {
            const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
            if (n <= 0)
                ok = false;
            else
                done += static_cast<size_t>(n);
        }
    }
    ok = ok && ::fsync(fd) == 0;
    const int saved = errno;
    ::close(fd);
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(ok ? errno : saved);
        std::filesystem::remove(tmp, ec);
        return fmt::format("cannot write {}: {}", path.string(), why);
    }
    return "";
}

}  // namespace

KernelCache::KernelCache(std::filesystem::path root) : root_(std::move(root)) {}

std::filesystem::path KernelCache::entry_path(const std::string& device_id,
                                              const std::string& key) const {
    return root_ / safe_component(device_id) / (safe_component(key) + ".bin");
}

std::optional<std::vector<uint8_t>> KernelCache::load(const std::string& device_id,
                                                      const std::string& key) {
    const auto path = entry_path(device_id, key);
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    Header h{};
    bool intact = data.size() >= sizeof(Header);
    if (intact) {
        std::memcpy(&h, data.data(), sizeof h);
        intact = std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
                 h.size == data.size() - sizeof(Header) &&
                 XXH3_64bits(data.data() + sizeof(Header), h.size) == h.checksum;
    }
    if (!intact) {
        ++corrupt_;
        warn_once("corrupt:" + path.string(),
                  fmt::format("kernel cache entry {} is corrupt; rebuilding it", path.string()));
        std::error_code ec;
        std::filesystem::remove(path, ec);
        return std::nullopt;
    }
    return std::vector<uint8_t>(data.begin() + sizeof(Header), data.end());
}

void KernelCache::store(const std::string& device_id, const std::string& key,
                        std::span<const uint8_t> binary) {
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.size = binary.size();
    h.checksum = XXH3_64bits(binary.data(), binary.size());
    const auto* hp = reinterpret_cast<const uint8_t*>(&h);
    const std::string err = write_atomic(entry_path(device_id, key), {hp, sizeof h}, binary);
    if (!err.empty())
        warn_once("unwritable:" + root_.string(),
                  fmt::format("kernel cache under {} is not writable ({}); compiled kernels are "
                              "kept in memory only",
                              root_.string(), err));
}

std::string KernelCache::save_failed_source(const std::string& device_id, const std::string& key,
                                            const std::string& suffix, const std::string& source) {
    const auto bytes = std::span(reinterpret_cast<const uint8_t*>(source.data()), source.size());
    auto path = root_ / safe_component(device_id) / "failed" / (safe_component(key) + suffix);
    if (write_atomic(path, {}, bytes).empty()) return path.string();
    path = std::filesystem::temp_directory_path() /
           fmt::format("kiln-failed-{}{}", safe_component(key), suffix);
    if (write_atomic(path, {}, bytes).empty()) return path.string();
    return "";
}

KernelCache& process_kernel_cache() {
    static std::mutex mutex;
    static std::unique_ptr<KernelCache> cache;
    std::lock_guard lock(mutex);
    const auto root = cache_root() / "kernels";
    if (!cache || cache->root() != root) cache = std::make_unique<KernelCache>(root);
    return *cache;
}

}  // namespace kiln::cache
