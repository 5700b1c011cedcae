// JSON string quoting for the CLI's --json outputs.
#include "json.hpp"

#include <fmt/format.h>

namespace kiln::cli {

std::string json_quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20)
                    out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                else
                    out += c;  // UTF-8 bytes pass through unchanged
        }
    }
    out += '"';
    return out;
}

}  // namespace kiln::cli
