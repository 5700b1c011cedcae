// open_regular: symlink-, FIFO- and device-proof opening of the cache's files.
#include "cache/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kiln::cache {
namespace {

std::string what_it_is(mode_t mode) {
    if (S_ISDIR(mode)) return "is a directory";
    if (S_ISFIFO(mode)) return "is a FIFO";
    if (S_ISCHR(mode)) return "is a character device";
    if (S_ISBLK(mode)) return "is a block device";
    if (S_ISSOCK(mode)) return "is a socket";
    if (S_ISLNK(mode)) return "is a symbolic link";
    return "is not a regular file";
}

}  // namespace

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

FileDescriptor::~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
}

int FileDescriptor::release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

FileDescriptor open_regular(const std::filesystem::path& path, int flags, mode_t mode,
                            std::string& why) {
    why.clear();
    FileDescriptor fd(::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode));
    if (!fd) {
        const int err = errno;
        struct stat st {};
        if ((err == ENOENT || err == ENOTDIR) && !(flags & O_CREAT)) return fd;  // absent
        if ((err == ELOOP || err == EISDIR || err == ENXIO) && ::lstat(path.c_str(), &st) == 0)
            why = what_it_is(st.st_mode);
        else
            why = fmt::format("cannot be opened ({})", std::strerror(err));
        return fd;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        why = fmt::format("cannot be examined ({})", std::strerror(errno));
        return FileDescriptor();
    }
    if (!S_ISREG(st.st_mode)) {
        why = what_it_is(st.st_mode);
        return FileDescriptor();
    }
    return fd;
}

std::string read_whole(int fd, std::string& out, size_t max_bytes) {
    out.clear();
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0)
        out.reserve(std::min(static_cast<size_t>(st.st_size), max_bytes));
    char buffer[1 << 16];
    for (off_t offset = 0;;) {
        const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::strerror(errno);
        if (n == 0) return "";
        if (static_cast<size_t>(n) > max_bytes - out.size())
            return fmt::format("is larger than {} bytes", max_bytes);
        out.append(buffer, static_cast<size_t>(n));
        offset += n;
    }
}

std::vector<std::filesystem::path> directory_entries(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        out.push_back(it->path());
    return out;
}

}  // namespace kiln::cache
