// TempDir and the removal of the directories killed processes left behind.
#include "cache/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "cache/atomic_file.hpp"
#include "cache/regular_file.hpp"
#include "kiln/error.hpp"

namespace kiln::cache {
namespace {

constexpr size_t kRandomChars = 6;  // mkdtemp's XXXXXX

// Whether the prefix's stale directories were removed by this process already (once each).
bool first_use(const std::string& prefix) {
    static std::mutex mutex;
    static std::set<std::string> swept;
    std::lock_guard lock(mutex);
    return swept.insert(prefix).second;
}

}  // namespace

std::filesystem::path temp_root() {
    const char* tmp = std::getenv("TMPDIR");
    return (tmp && *tmp) ? tmp : "/tmp";
}

int remove_stale_temp_dirs(const std::string& prefix) {
    int removed = 0;
    for (const auto& path : directory_entries(temp_root())) {
        const std::string name = path.filename().string();
        struct stat st {};
        if (!name.starts_with(prefix) || ::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != ::geteuid())
            continue;
        const std::string_view rest = std::string_view(name).substr(prefix.size());
        const size_t dash = rest.find('-');
        pid_t pid = 0;
        const bool has_pid =
            dash != std::string_view::npos && dash > 0 && rest.size() == dash + 1 + kRandomChars &&
            std::from_chars(rest.data(), rest.data() + dash, pid).ptr == rest.data() + dash;
        if (!has_pid && rest.size() != kRandomChars) continue;  // not a name kiln gives
        std::error_code ec;
        const auto modified = std::filesystem::last_write_time(path, ec);
        if (ec) continue;
        const bool stale =
            has_pid ? writer_is_stale(pid, modified)
                    : std::filesystem::file_time_type::clock::now() - modified > kStaleAge;
        if (stale && std::filesystem::remove_all(path, ec) > 0 && !ec) ++removed;
    }
    return removed;
}

TempDir::TempDir(const std::string& prefix, const std::string& what) {
    if (first_use(prefix)) remove_stale_temp_dirs(prefix);
    std::string pattern = fmt::format("{}/{}{}-XXXXXX", temp_root().string(), prefix, ::getpid());
    if (!::mkdtemp(pattern.data()))
        fail("{}: cannot create a temporary directory {}: {}", what, pattern, std::strerror(errno));
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

}  // namespace kiln::cache
