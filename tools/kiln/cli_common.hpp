// Shared pieces of the kiln command-line tool: how a subcommand registers itself with CLI11 and
// hands main() the function that runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace kiln::cli {

// A registered subcommand: its CLI11 app (parsed() says whether the user chose it) and the
// function that runs it once parsing is done, returning the process exit code.
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

// A shape option's value (--rows 4096): decimal digits within int64, else a kiln::Error naming
// the command, the option and the limit. (CLI11 would clamp a larger value and read "010" as
// octal.) count_option.cpp
int64_t count_option(const char* command, const char* option, const std::string& text);

Command add_info_command(CLI::App& parent);         // info.cpp
Command add_demo_command(CLI::App& parent);         // demo.cpp
Command add_tune_command(CLI::App& parent);         // tune.cpp
Command add_cache_command(CLI::App& parent);        // cache.cpp
Command add_profile_command(CLI::App& parent);      // profile.cpp
Command add_conformance_command(CLI::App& parent);  // conformance.cpp
Command add_bench_command(CLI::App& parent);        // bench.cpp

}  // namespace kiln::cli
