// The kiln command-line tool: parses the command line with CLI11 and runs one subcommand.
// Exit codes: 0 success, 1 the subcommand's own failure (e.g. a device not bit-identical),
// 2 a usage error or a kiln::Error (a failed write to a file or standard output included),
// 3 an unexpected internal error.
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.hpp"
#include "kiln/error.hpp"
#include "output.hpp"

#ifndef KILN_VERSION
#error "KILN_VERSION (the project's version) must be defined by the build"
#endif

namespace {

// Where a parse failed for want of a subcommand (CLI11's RequiredError) because the command
// line names none, or one that does not exist, of the innermost command that needs one: "kiln tune:
// unknown subcommand 'bogus'; expected one of rms_norm, ...". Other parse errors: nullopt (CLI11's
// message says them).
std::optional<std::string> subcommand_error(const CLI::App& app) {
    const CLI::App* at = &app;
    std::string path = app.get_name();
    while (!at->get_subcommands().empty()) {
        at = at->get_subcommands().front();
        path += " " + at->get_name();
    }
    if (at->get_require_subcommand_min() == 0) return std::nullopt;
    std::vector<std::string> names;
    for (const CLI::App* sub : at->get_subcommands({})) names.push_back(sub->get_name());
    const std::vector<std::string> extra = at->remaining();
    const std::string what = extra.empty() || extra.front().starts_with('-')
                                 ? "a subcommand is required"
                                 : fmt::format("unknown subcommand '{}'", extra.front());
    return fmt::format("{}: {}; expected one of {}", path, what, fmt::join(names, ", "));
}

// Parses the command line and runs the chosen subcommand; returns the exit code, every error
// printed.
int parse_and_run(CLI::App& app, const std::vector<kiln::cli::Command>& commands, int argc,
                  char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (app.count("--version") > 0) {  // CLI11 checks the subcommand before --version
            std::printf("%s\n", app.version().c_str());
            return 0;
        }
        const auto message =
            dynamic_cast<const CLI::RequiredError*>(&e) ? subcommand_error(app) : std::nullopt;
        if (message) {
            std::fprintf(stderr, "%s\nRun with --help for more information.\n", message->c_str());
            return 2;
        }
        return app.exit(e) == 0 ? 0 : 2;  // --help, --version: success; every other is usage
    }
    try {
        for (const auto& command : commands)
            if (command.app->parsed()) return command.run();
        return 2;  // unreachable: require_subcommand(1)
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "kiln: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        if (std::ferror(stdout)) return 2;  // fmt::print's failed write; main names it
        std::fprintf(stderr, "kiln: internal error: %s\n", e.what());
        return 3;
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"kiln: write each tensor kernel once, run it bit-identically on every device",
                 "kiln"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "kiln " KILN_VERSION, "Print kiln's version and exit");
    const std::vector<kiln::cli::Command> commands = {
        kiln::cli::add_info_command(app),    kiln::cli::add_demo_command(app),
        kiln::cli::add_tune_command(app),    kiln::cli::add_cache_command(app),
        kiln::cli::add_profile_command(app), kiln::cli::add_conformance_command(app),
        kiln::cli::add_bench_command(app),   kiln::cli::add_program_command(app),
    };
    const int status = parse_and_run(app, commands, argc, argv);
    try {
        kiln::cli::check_stdout();  // every command's output, --help's too, reached its target
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "kiln: error: %s\n", e.what());
        return 2;
    }
    return status;
}
