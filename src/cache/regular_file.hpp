// Opening the cache's files as kiln expects them: never through a final symbolic link, never
// blocking (a FIFO in a file's place), and only when the path is a regular file; and listing
// the cache's directories.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln::cache {

// A descriptor closed when this goes out of scope.
class FileDescriptor {
  public:
    FileDescriptor() = default;
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
    FileDescriptor& operator=(FileDescriptor&& other) noexcept;
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor();

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release();

  private:
    int fd_ = -1;
};

// Opens `path` with `flags` (plus O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC; `mode` when O_CREAT
// creates it) and checks that it is a regular file. On failure the descriptor is empty and
// `why` says what the path is instead ("is a symbolic link", "is a directory", "is a FIFO", ...)
// or what failed; `why` is "" when the path does not exist and O_CREAT was not asked for.
FileDescriptor open_regular(const std::filesystem::path& path, int flags, mode_t mode,
                            std::string& why);

// Reads the whole file behind `fd` from offset 0 into `out`. Returns an error text, or "" ("is
// larger than N bytes" when it holds more than `max_bytes`).
std::string read_whole(int fd, std::string& out, size_t max_bytes = SIZE_MAX);

// The paths in `dir` (none when it cannot be listed), listed before any is removed.
std::vector<std::filesystem::path> directory_entries(const std::filesystem::path& dir);

}  // namespace kiln::cache
