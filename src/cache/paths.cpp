// Cache root resolution per the XDG base directory spec, with KILN_CACHE_DIR overriding.
#include "cache/paths.hpp"

#include <cctype>
#include <cstdlib>

#include "kiln/error.hpp"

namespace kiln::cache {

std::filesystem::path cache_root() {
    if (const char* dir = std::getenv("KILN_CACHE_DIR"); dir && *dir) return dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && xdg[0] == '/')
        return std::filesystem::path(xdg) / "kiln";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "kiln";
    // No shared fallback (a directory in /tmp others could prepare): nothing is kept on disk.
    warn_once("no-cache-root",
              "no cache directory: KILN_CACHE_DIR, XDG_CACHE_HOME and HOME are unset; compiled "
              "kernels, tuning decisions and device facts are kept in memory only");
    return {};
}

std::string safe_component(const std::string& name) {
    std::string out = name;
    for (char& c : out)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
            c = '_';
    if (out.empty() || out == "." || out == "..") out = "_" + out;
    return out;
}

}  // namespace kiln::cache
