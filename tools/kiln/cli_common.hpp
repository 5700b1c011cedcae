// Shared pieces of the kiln command-line tool: how a subcommand registers itself with CLI11 and
// hands main() the function that runs it.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace kiln::cli {

// A registered subcommand: its CLI11 app (parsed() says whether the user chose it) and the
// function that runs it once parsing is done, returning the process exit code.
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

// A whole-number option's text: decimal digits only, the value within [min, max]; else nullopt.
std::optional<uint64_t> parse_decimal(std::string_view text, uint64_t min, uint64_t max);
// What a bad value is told: "'0x10' given; expected a decimal whole number from 1 to 1000".
std::string expected_decimal(std::string_view given, uint64_t min, uint64_t max);
// A CLI11 transform refusing other text with that message (CLI11 prefixes the option's name);
// it hands CLI11 the value's plain decimal form. `description` shows in --help.
CLI::Validator decimal_in(uint64_t min, uint64_t max, const std::string& description);

// Adds a whole-number option (--rows 4096, --seed 7) to `app`: decimal digits within
// [min, max] (min >= 0), anything else a usage error naming the option, the value and the
// range. Every numeric option of the tool is added this way: CLI11 alone reads 0x10 as hex and
// 010 as octal, wraps -1 and clamps values beyond the type. number_option.cpp
template <std::integral T>
CLI::Option* add_number_option(CLI::App* app, const std::string& name, T& value,
                               const std::string& help, T min = 1,
                               T max = std::numeric_limits<T>::max()) {
    const std::string range = max == std::numeric_limits<T>::max()
                                  ? ">= " + std::to_string(min)
                                  : std::to_string(min) + " to " + std::to_string(max);
    return app->add_option(name, value, help)
        ->transform(decimal_in(static_cast<uint64_t>(min), static_cast<uint64_t>(max), range));
}

Command add_info_command(CLI::App& parent);         // info.cpp
Command add_demo_command(CLI::App& parent);         // demo.cpp
Command add_tune_command(CLI::App& parent);         // tune.cpp
Command add_cache_command(CLI::App& parent);        // cache.cpp
Command add_profile_command(CLI::App& parent);      // profile.cpp
Command add_conformance_command(CLI::App& parent);  // conformance.cpp
Command add_bench_command(CLI::App& parent);        // bench.cpp
Command add_program_command(CLI::App& parent);      // program.cpp

}  // namespace kiln::cli
