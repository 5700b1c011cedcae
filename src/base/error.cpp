// warn_once: warnings kiln prints at most once per process for each key.
#include <cstdio>
#include <mutex>
#include <set>

#include "kiln/error.hpp"

namespace kiln {

void warn_once(const std::string& key, const std::string& message) {
    static std::mutex mutex;
    static std::set<std::string> seen;
    std::lock_guard lock(mutex);
    if (!seen.insert(key).second) return;
    std::fprintf(stderr, "kiln: warning: %s\n", message.c_str());
}

}  // namespace kiln
