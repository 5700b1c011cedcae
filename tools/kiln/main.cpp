// The kiln command-line tool: parses the command line with CLI11 and runs one subcommand.
// Exit codes: 0 success, 1 the subcommand's own failure (e.g. a device not bit-identical),
// 2 a usage error or a kiln::Error (a failed write to a file or standard output included),
// 3 an unexpected internal error.
#include <cstdio>
#include <exception>
#include <vector>

#include "cli_common.hpp"
#include "kiln/error.hpp"
#include "output.hpp"

namespace {

// Parses the command line and runs the chosen subcommand; returns the exit code, every error
// printed.
int parse_and_run(CLI::App& app, const std::vector<kiln::cli::Command>& commands, int argc,
                  char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;  // --help is success; every other parse error is usage
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
    const std::vector<kiln::cli::Command> commands = {
        kiln::cli::add_info_command(app),    kiln::cli::add_demo_command(app),
        kiln::cli::add_tune_command(app),    kiln::cli::add_cache_command(app),
        kiln::cli::add_profile_command(app), kiln::cli::add_conformance_command(app),
        kiln::cli::add_bench_command(app),
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
