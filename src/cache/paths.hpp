// Where kiln keeps files: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; with
// none of them set, nowhere (an empty path, after one warning).
#pragma once

#include <filesystem>
#include <string>

namespace kiln::cache {

std::filesystem::path cache_root();
// Makes `name` safe as one path component: [A-Za-z0-9._-], others become '_'.
std::string safe_component(const std::string& name);

}  // namespace kiln::cache
