// Reading, writing and recognising the small files kept beside an autotune TSV.
#include "tune/side_file.hpp"

#include <fcntl.h>

#include <cstdint>

#include <fmt/format.h>

#include "cache/atomic_file.hpp"
#include "cache/regular_file.hpp"

namespace kiln::tune {
namespace {

std::string marker(const std::string& kind) {
    return fmt::format("# kiln {}\n", kind);
}

}  // namespace

std::string side_file_problem(const std::filesystem::path& path) {
    std::string why;
    cache::open_regular(path, O_RDONLY, 0, why);
    return why;
}

std::string read_side_file(const std::filesystem::path& path, const std::string& kind,
                           std::string& text, bool& found) {
    found = false;
    text.clear();
    std::string why;
    const cache::FileDescriptor fd = cache::open_regular(path, O_RDONLY, 0, why);
    if (!fd) return why;
    std::string data;
    if (const std::string err = cache::read_whole(fd.get(), data, kSideFileMax); !err.empty())
        return err.starts_with("is ") ? err : fmt::format("cannot be read ({})", err);
    const std::string head = marker(kind);
    if (!data.starts_with(head)) return "";  // not kiln's (or an older kiln's): as if absent
    found = true;
    text = data.substr(head.size());
    return "";
}

std::string write_side_file(const std::filesystem::path& path, const std::string& kind,
                            const std::string& text) {
    const std::string data = marker(kind) + text;
    return cache::write_atomic(path,
                               {{reinterpret_cast<const uint8_t*>(data.data()), data.size()}});
}

bool looks_like_side_file(const std::filesystem::path& path, const std::string& kind) {
    std::string text;
    bool found = false;
    return read_side_file(path, kind, text, found).empty() && found;
}

}  // namespace kiln::tune
