// Minimal JSON output for the CLI: string quoting with full escaping (no dependency needed).
#pragma once

#include <string>
#include <string_view>

namespace kiln::cli {

// `text` as a JSON string literal, quotes included: escapes ", \ and every control character.
std::string json_quote(std::string_view text);

}  // namespace kiln::cli
