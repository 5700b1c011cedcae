// Running helper programs (the system C++ compiler) without a shell: posix_spawn, combined
// stdout+stderr capture, and a wall-clock timeout that kills the whole process group.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime::cpu {

struct ProcessResult {
    int exit_status = -1;  // the exit code when the program exited normally
    int signal = 0;        // the signal that ended it, 0 when it exited
    bool timed_out = false;
    std::string output;  // stdout and stderr, interleaved as written
    bool ok() const { return !timed_out && signal == 0 && exit_status == 0; }
};

// Runs argv[0] (an absolute or relative path, not looked up on PATH) with stdin from /dev/null.
// Throws kiln::Error when the program cannot be started at all.
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Starts argv[0] with the given descriptors as its stdin, stdout and stderr (-1: /dev/null for
// stdin) in a process group of its own, SIGPIPE at its default and no signals blocked. Returns
// its pid; throws kiln::Error when it cannot be started. The caller waits for it.
int spawn_process(const std::vector<std::string>& argv, int stdin_fd, int stdout_fd, int stderr_fd);

// Resolves `name` to an executable file: a name with a '/' is taken as a path, anything else is
// looked up on $PATH. Returns nothing when no executable file matches.
std::optional<std::string> find_executable(const std::string& name);

// The argv as a copy-pasteable command line (arguments with spaces or quotes are quoted).
std::string command_line(const std::vector<std::string>& argv);

}  // namespace kiln::runtime::cpu
