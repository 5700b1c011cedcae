// Reading, appending to and compacting a device's autotune TSV.
#include "tune/tsv_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cache/atomic_file.hpp"
#include "cache/regular_file.hpp"

namespace kiln::tune {
namespace {

using cache::FileDescriptor;

// Streams the file behind `fd` from offset 0 into `table`.
std::string read_into(int fd, TsvTable& table) {
    std::string buffer(1 << 20, '\0');
    for (off_t offset = 0;;) {
        const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::strerror(errno);
        if (n == 0) break;
        table.feed(std::string_view(buffer.data(), static_cast<size_t>(n)));
        offset += n;
    }
    table.finish();
    return "";
}

// Opens `path` for appending (creating it) and takes its exclusive lock. A compaction renames a
// new file over the path while holding the old file's lock, so after the lock is taken the
// descriptor must still be the path's file; otherwise it is opened again.
FileDescriptor open_locked(const std::filesystem::path& path, std::string& why) {
    for (int attempt = 0; attempt < 100; ++attempt) {
        FileDescriptor fd = cache::open_regular(path, O_RDWR | O_APPEND | O_CREAT, 0600, why);
        if (!fd) return fd;
        while (::flock(fd.get(), LOCK_EX) != 0 && errno == EINTR) {
        }
        struct stat held {
        }, named{};
        if (::fstat(fd.get(), &held) == 0 && ::lstat(path.c_str(), &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino)
            return fd;
    }
    why = "keeps being replaced while kiln waits for its lock";
    return FileDescriptor();
}

}  // namespace

std::string read_tsv(const std::filesystem::path& path, TsvTable& table) {
    std::string why;
    const FileDescriptor fd = cache::open_regular(path, O_RDONLY, 0, why);
    if (!fd) return why;
    if (const std::string err = read_into(fd.get(), table); !err.empty())
        return fmt::format("cannot be read ({})", err);
    return "";
}

std::string append_tsv_line(const std::filesystem::path& path, const std::string& line) {
    std::string why;
    const FileDescriptor fd = open_locked(path, why);
    if (!fd) return fmt::format("{} {}", path.string(), why);
    std::string text = line;
    struct stat st {};
    char last = '\n';
    if (::fstat(fd.get(), &st) == 0 && st.st_size > 0 &&
        ::pread(fd.get(), &last, 1, st.st_size - 1) == 1 && last != '\n')
        text.insert(text.begin(), '\n');
    const ssize_t n = ::write(fd.get(), text.data(), text.size());
    if (n < 0) return fmt::format("cannot write {}: {}", path.string(), std::strerror(errno));
    if (static_cast<size_t>(n) != text.size())
        return fmt::format("short write to {} ({} of {} bytes)", path.string(), n, text.size());
    return "";  // closing the descriptor releases the lock
}

std::string compact_tsv(const std::filesystem::path& path, TsvTable& table) {
    std::string why;
    const FileDescriptor fd = open_locked(path, why);
    if (!fd) return fmt::format("{} {}", path.string(), why);
    TsvTable fresh;
    if (const std::string err = read_into(fd.get(), fresh); !err.empty())
        return fmt::format("cannot read {}: {}", path.string(), err);
    table = std::move(fresh);
    if (!table.dead_lines_dominate()) return "";
    const std::string text = table.live_text();
    const std::string err =
        cache::write_atomic(path, {{reinterpret_cast<const uint8_t*>(text.data()), text.size()}});
    if (!err.empty()) return err;
    // What the table now stands for: the live lines only.
    TsvTable rewritten;
    rewritten.feed(text);
    rewritten.finish();
    table = std::move(rewritten);
    return "";
}

bool looks_like_tsv(const std::filesystem::path& path) {
    std::string why;
    const FileDescriptor fd = cache::open_regular(path, O_RDONLY, 0, why);
    if (!fd) return false;
    char head[4096];
    const ssize_t n = ::pread(fd.get(), head, sizeof head, 0);
    if (n == 0) return true;
    if (n < 0) return false;
    const std::string_view text(head, static_cast<size_t>(n));
    const size_t end = text.find('\n');
    return end != std::string_view::npos && parse_line(text.substr(0, end)).has_value();
}

}  // namespace kiln::tune
