// write_atomic and the cleanup of temporaries that killed writers left behind.
#include "cache/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "cache/regular_file.hpp"

namespace kiln::cache {
namespace {

bool process_exists(pid_t pid) {
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

bool all_of(std::string_view text, bool (*pred)(char)) {
    if (text.empty()) return false;
    for (char c : text)
        if (!pred(c)) return false;
    return true;
}

}  // namespace

std::string write_atomic(const std::filesystem::path& path,
                         std::initializer_list<std::span<const uint8_t>> parts) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    const auto tmp = path.parent_path() /
                     fmt::format(".{}.{}.{:x}.tmp", path.filename().string(), ::getpid(), rng());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno));
    bool ok = true;
    for (auto part : parts) {
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
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        return fmt::format("cannot write {}: {}", path.string(), why);
    }
    return "";
}

std::optional<Temporary> parse_temporary(const std::string& name) {
    std::string_view rest = name;
    if (rest.size() < 2 || rest.front() != '.' || !rest.ends_with(".tmp")) return std::nullopt;
    rest = rest.substr(1, rest.size() - 5);  // "<name>.<pid>.<hex>"
    const size_t hex_dot = rest.rfind('.');
    if (hex_dot == std::string_view::npos || hex_dot == 0) return std::nullopt;
    const size_t pid_dot = rest.rfind('.', hex_dot - 1);
    if (pid_dot == std::string_view::npos || pid_dot == 0) return std::nullopt;
    const std::string_view hex = rest.substr(hex_dot + 1);
    const std::string_view digits = rest.substr(pid_dot + 1, hex_dot - pid_dot - 1);
    if (!all_of(hex, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }) ||
        !all_of(digits, [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) return std::nullopt;
    return Temporary{std::string(rest.substr(0, pid_dot)), pid};
}

bool writer_is_stale(pid_t pid, std::filesystem::file_time_type modified) {
    const auto age = std::filesystem::file_time_type::clock::now() - modified;
    return age > kStaleAge || (age > std::chrono::minutes(1) && !process_exists(pid));
}

bool is_stale_temporary(const std::filesystem::path& path) {
    const auto temporary = parse_temporary(path.filename().string());
    struct stat st {};
    if (!temporary || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid())
        return false;
    std::error_code ec;
    const auto modified = std::filesystem::last_write_time(path, ec);
    return !ec && writer_is_stale(temporary->writer, modified);
}

int remove_stale_temporaries(const std::filesystem::path& dir) {
    int removed = 0;
    std::error_code ec;
    for (const auto& path : directory_entries(dir))
        if (is_stale_temporary(path) && std::filesystem::remove(path, ec)) ++removed;
    return removed;
}

}  // namespace kiln::cache
