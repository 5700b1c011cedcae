// The one parser of the kiln tool's whole-number options (sizes, counts, repeats, seeds): decimal
// digits within a range, nothing else.
#include <algorithm>
#include <charconv>
#include <system_error>

#include <fmt/format.h>

#include "cli_common.hpp"

namespace kiln::cli {

std::optional<uint64_t> parse_decimal(std::string_view text, uint64_t min, uint64_t max) {
    if (text.empty() ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
    if (ec != std::errc() || ptr != end || value < min || value > max) return std::nullopt;
    return value;
}

std::string expected_decimal(std::string_view given, uint64_t min, uint64_t max) {
    return fmt::format("'{}' given; expected a decimal whole number from {} to {}", given, min,
                       max);
}

CLI::Validator decimal_in(uint64_t min, uint64_t max, const std::string& description) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            const auto value = parse_decimal(text, min, max);
            if (!value) return expected_decimal(text, min, max);
            text = std::to_string(*value);  // CLI11 reads a leading 0 as octal, 0x as hex
            return {};
        },
        description);
}

}  // namespace kiln::cli
