// break_switch: reads KILN_CONFORMANCE_BREAK.
#include "base/break_switch.hpp"

#include <cstdlib>

namespace kiln {

bool break_switch(std::string_view what) {
    const char* env = std::getenv("KILN_CONFORMANCE_BREAK");
    if (!env) return false;
    std::string_view list(env);
    while (!list.empty()) {
        const size_t comma = list.find(',');
        if (list.substr(0, comma) == what) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

}  // namespace kiln
