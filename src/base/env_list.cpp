// env_list_has (env_list.hpp).
#include "base/env_list.hpp"

#include <cstdlib>

namespace kiln {

bool env_list_has(const char* variable, std::string_view word) {
    const char* env = std::getenv(variable);
    if (!env) return false;
    std::string_view list(env);
    while (!list.empty()) {
        const size_t comma = list.find(',');
        if (list.substr(0, comma) == word) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

}  // namespace kiln
