// count_option: strict parsing of the tool's shape options.
#include <charconv>
#include <cstdint>
#include <limits>
#include <system_error>

#include "cli_common.hpp"
#include "kiln/error.hpp"

namespace kiln::cli {

int64_t count_option(const char* command, const char* option, const std::string& text) {
    int64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
    if (ec == std::errc::result_out_of_range)
        fail("{}: {} {} is beyond int64 (at most {})", command, option, text,
             std::numeric_limits<int64_t>::max());
    if (text.empty() || ec != std::errc() || ptr != end)
        fail("{}: {} '{}' is not a whole number", command, option, text);
    return value;
}

}  // namespace kiln::cli
