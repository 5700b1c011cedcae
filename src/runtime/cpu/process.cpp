// posix_spawn-based process runner for the CPU backend's compiler invocations.
#include "runtime/cpu/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kiln/error.hpp"

extern char** environ;

namespace kiln::runtime::cpu {
namespace {

// Closes a file descriptor when it goes out of scope.
struct Fd {
    int fd = -1;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

bool is_executable_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_executable(const std::string& name) {
    if (name.empty()) return std::nullopt;
    if (name.find('/') != std::string::npos) {
        if (is_executable_file(name)) return name;
        return std::nullopt;
    }
    const char* path_env = std::getenv("PATH");
    std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find(':', start);
        if (end == std::string::npos) end = path.size();
        // An empty PATH entry means the current directory. Built by appending: GCC 12 reports
        // a false -Wrestrict on string concatenation here.
        std::string candidate;
        if (end == start)
            candidate.push_back('.');
        else
            candidate.append(path, start, end - start);
        candidate.push_back('/');
        candidate.append(name);
        if (is_executable_file(candidate)) return candidate;
        start = end + 1;
    }
    return std::nullopt;
}

std::string command_line(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& arg : argv) {
        if (!out.empty()) out += ' ';
        bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
        if (plain) {
            out += arg;
            continue;
        }
        out += '\'';
        for (char c : arg) {
            if (c == '\'')
                out += "'\\''";
            else
                out += c;
        }
        out += '\'';
    }
    return out;
}

int spawn_process(const std::vector<std::string>& argv, int stdin_fd, int stdout_fd,
                  int stderr_fd) {
    if (argv.empty()) fail("spawn_process: empty command");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stdin_fd < 0)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    else
        posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group, so a timeout can kill the program and everything it started.
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t default_signals;
    sigemptyset(&default_signals);
    sigaddset(&default_signals, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &default_signals);
    sigset_t no_signals;
    sigemptyset(&no_signals);
    posix_spawnattr_setsigmask(&attr, &no_signals);  // not the calling thread's blocked set
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) fail("cannot run {}: {}", command_line(argv), std::strerror(rc));
    return pid;
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    if (argv.empty()) fail("run_process: empty command");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
        fail("cannot create a pipe to run {}: {}", argv[0], std::strerror(errno));
    Fd read_end{pipe_fds[0]};
    Fd write_end{pipe_fds[1]};

    const pid_t pid = spawn_process(argv, -1, write_end.fd, write_end.fd);
    write_end.reset();

    ProcessResult result;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto remaining_ms = [&] {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        return left.count() < 0 ? 0 : static_cast<int>(left.count());
    };
    char buffer[65536];
    bool eof = false;
    while (!eof) {
        int left = remaining_ms();
        if (left == 0) {
            result.timed_out = true;
            break;
        }
        pollfd pfd{read_end.fd, POLLIN, 0};
        int n = ::poll(&pfd, 1, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (n == 0) continue;  // the deadline check above ends the loop
        ssize_t got = ::read(read_end.fd, buffer, sizeof buffer);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        if (got == 0)
            eof = true;
        else
            result.output.append(buffer, static_cast<size_t>(got));
    }

    // On a timeout, kill the program and everything it started; otherwise its output is closed
    // and it is finishing: wait for it, up to the same deadline.
    auto kill_group = [&] {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
    };
    if (result.timed_out) kill_group();
    int status = 0;
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) fail("cannot wait for {}: {}", command_line(argv), std::strerror(errno));
        if (!result.timed_out && remaining_ms() == 0) {
            result.timed_out = true;
            kill_group();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    return result;
}

}  // namespace kiln::runtime::cpu
