// The kiln command-line tool: parses the command line with CLI11 and runs one subcommand.
// Exit codes: 0 success, 1 the subcommand's own failure (e.g. a device not bit-identical),
// 2 a usage error or a kiln::Error, 3 an unexpected internal error.
#include <cstdio>
#include <exception>
#include <vector>

#include "cli_common.hpp"
#include "kiln/error.hpp"

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
        std::fprintf(stderr, "kiln: internal error: %s\n", e.what());
        return 3;
    }
}
