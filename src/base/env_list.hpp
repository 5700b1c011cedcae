// env_list_has: whether an environment variable holding a comma-separated list of words
// (KILN_DUMP, KILN_CONFORMANCE_BREAK) names `word`, read at each call so tests can set it.
#pragma once

#include <string_view>

namespace kiln {

bool env_list_has(const char* variable, std::string_view word);

}  // namespace kiln
