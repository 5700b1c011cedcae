// Checked writes of files and standard output for the kiln tool (output.hpp).
#include "output.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kiln/error.hpp"

namespace kiln::cli {
namespace {

constexpr const char* kStdout = "standard output";

[[noreturn]] void write_failed(const std::string& where, int error) {
    fail("cannot write {}: {}", where, error ? std::strerror(error) : "the write failed");
}

// Writes `text` to `stream` and flushes it; any error on the stream, an earlier one included,
// fails naming `where`.
void write_checked(std::FILE* stream, const std::string& where, std::string_view text) {
    errno = 0;
    // Nothing to write (check_stdout): no fwrite, whose buffer may not be null.
    const bool written =
        text.empty() || std::fwrite(text.data(), 1, text.size(), stream) == text.size();
    if (!written || std::fflush(stream) != 0 || std::ferror(stream)) write_failed(where, errno);
}

}  // namespace

void write_output(const std::string& path, std::string_view text) {
    if (path.empty()) return write_checked(stdout, kStdout, text);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) write_failed(path, errno);
    try {
        write_checked(file, path, text);
    } catch (...) {
        std::fclose(file);
        throw;
    }
    errno = 0;
    if (std::fclose(file) != 0) write_failed(path, errno);
}

void check_stdout() {
    write_checked(stdout, kStdout, {});
}

}  // namespace kiln::cli
