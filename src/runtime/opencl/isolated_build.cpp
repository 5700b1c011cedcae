// build_isolated(): sources built by a kiln-opencl-probe helper that stays up between builds (one
// per device and helper program, started again after it dies), its replies and its end turned
// into binaries or kiln::Errors, and crash verdicts kept beside the kernel cache.
#include "runtime/opencl/isolated_build.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>  // sigabbrev_np
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "cache/temp_dir.hpp"
#include "kiln/error.hpp"
#include "runtime/cpu/process.hpp"
#include "runtime/opencl/cl_check.hpp"

namespace kiln::runtime::opencl {
namespace {

namespace fs = std::filesystem;

// A build that takes longer than this is taken for a hang.
constexpr std::chrono::minutes kBuildTimeout{10};
// Bytes of the end of the compiler's output kept in an error and in a verdict.
constexpr size_t kOutputTailBytes = 2000;

std::string tail(const std::string& text) {
    std::string t =
        text.size() > kOutputTailBytes ? "..." + text.substr(text.size() - kOutputTailBytes) : text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t.empty() ? "(no output)" : t;
}

// How a build in the helper ended: a reply (status and bytes), or the helper's end.
struct Outcome {
    bool replied = false;
    uint32_t status = 0;  // the reply's: 0 built, 2 build failure, 3 anything else
    std::string bytes;    // the binary, build log or message
    int exit_status = -1, signal = 0;
    bool timed_out = false;
    std::string output;  // what the helper wrote to stderr during this build
};

// One running `kiln-opencl-probe --serve`: requests on its stdin, replies on its stdout, its
// stderr in an unlinked temporary file read back when a build goes wrong.
class Helper {
  public:
    explicit Helper(std::vector<std::string> argv) : argv_(std::move(argv)) {}
    Helper(const Helper&) = delete;
    Helper& operator=(const Helper&) = delete;

    const std::vector<std::string>& argv() const { return argv_; }

    Outcome build(std::string_view options, const std::string& source) {
        std::lock_guard lock(mutex_);
        // A helper started for this build may have written (or crashed) already: all it wrote.
        const bool started_now = pid_ < 0;
        if (started_now) start();
        const off_t stderr_start = started_now ? 0 : stderr_size();
        Outcome o;
        const auto deadline = std::chrono::steady_clock::now() + kBuildTimeout;
        if (send(options) && send(source)) {
            uint64_t size = 0;
            if (receive(&o.status, sizeof o.status, deadline, o.timed_out) &&
                receive(&size, sizeof size, deadline, o.timed_out)) {
                o.bytes.resize(size);
                o.replied = receive(o.bytes.data(), o.bytes.size(), deadline, o.timed_out);
            }
        }
        if (!o.replied) {
            o.output = stderr_since(stderr_start);
            finish(o);
        }
        return o;
    }

  private:
    void start() {
        {
            cache::TempDir dir("kiln-opencl-", "OpenCL build");
            const fs::path file = dir.path() / "helper-stderr";
            stderr_fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            ::unlink(file.c_str());
        }
        if (stderr_fd_ < 0)
            fail("OpenCL build: cannot create a file for {}'s output: {}", argv_[0],
                 std::strerror(errno));
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) != 0) in[0] = in[1] = -1;
        if (::pipe2(out, O_CLOEXEC) != 0) out[0] = out[1] = -1;
        auto close_all = [&] {
            for (int fd : {in[0], in[1], out[0], out[1], stderr_fd_})
                if (fd >= 0) ::close(fd);
            stderr_fd_ = -1;
        };
        if (in[0] < 0 || out[0] < 0) {
            const int error = errno;
            close_all();
            fail("OpenCL build: cannot create pipes for {}: {}", argv_[0], std::strerror(error));
        }
        try {
            pid_ = cpu::spawn_process(argv_, in[0], out[1], stderr_fd_);
        } catch (...) {
            close_all();
            throw;
        }
        ::close(in[0]);
        ::close(out[1]);
        to_helper_ = in[1];
        from_helper_ = out[0];
    }

    // Writes one field (its length, then its bytes); false when the helper is gone.
    bool send(std::string_view field) {
        // Writing to a helper that died fails with EPIPE; its SIGPIPE must not end this process,
        // so it is blocked here and taken back if it came.
        sigset_t pipe_signal, old_mask;
        sigemptyset(&pipe_signal);
        sigaddset(&pipe_signal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
        const uint64_t size = field.size();
        const bool ok = write_all(&size, sizeof size) && write_all(field.data(), field.size());
        if (!ok) {
            const timespec zero{0, 0};
            while (sigtimedwait(&pipe_signal, nullptr, &zero) > 0) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
        return ok;
    }

    bool write_all(const void* data, size_t size) {
        const auto* p = static_cast<const char*>(data);
        while (size > 0) {
            const ssize_t put = ::write(to_helper_, p, size);
            if (put < 0 && errno == EINTR) continue;
            if (put <= 0) return false;
            p += put;
            size -= static_cast<size_t>(put);
        }
        return true;
    }

    // Reads exactly `size` bytes of a reply by the deadline; false at the helper's end or past
    // the deadline (then `timed_out`).
    bool receive(void* data, size_t size, std::chrono::steady_clock::time_point deadline,
                 bool& timed_out) {
        auto* p = static_cast<char*>(data);
        while (size > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                timed_out = true;
                return false;
            }
            pollfd pfd{from_helper_, POLLIN, 0};
            const int n = ::poll(&pfd, 1, static_cast<int>(left.count()));
            if (n <= 0) continue;  // EINTR, or the deadline, which the check above sees
            const ssize_t got = ::read(from_helper_, p, size);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) return false;
            p += got;
            size -= static_cast<size_t>(got);
        }
        return true;
    }

    off_t stderr_size() const {
        struct stat st {};
        return ::fstat(stderr_fd_, &st) == 0 ? st.st_size : 0;
    }

    std::string stderr_since(off_t start) const {
        const off_t end = stderr_size();
        std::string text(static_cast<size_t>(end > start ? end - start : 0), '\0');
        const ssize_t got = ::pread(stderr_fd_, text.data(), text.size(), start);
        text.resize(got > 0 ? static_cast<size_t>(got) : 0);
        return text;
    }

    // Ends the helper after a build that got no reply (killing it and what it started when
    // the build timed out) and records how it ended; the next build starts another.
    void finish(Outcome& o) {
        ::close(to_helper_);
        ::close(from_helper_);
        to_helper_ = from_helper_ = -1;
        auto kill_group = [&] {
            ::kill(-pid_, SIGKILL);
            ::kill(pid_, SIGKILL);
        };
        if (o.timed_out) kill_group();
        // Its replies ended, so it is ending; killed if it lingers.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        int status = 0;
        for (;;) {
            const pid_t done = ::waitpid(pid_, &status, WNOHANG);
            if (done == pid_ || (done < 0 && errno != EINTR)) break;
            if (std::chrono::steady_clock::now() > give_up) kill_group();
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (WIFEXITED(status)) o.exit_status = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
        ::close(stderr_fd_);
        stderr_fd_ = -1;
        pid_ = -1;
    }

    const std::vector<std::string> argv_;
    std::mutex mutex_;
    pid_t pid_ = -1;
    int to_helper_ = -1, from_helper_ = -1, stderr_fd_ = -1;
};

// The helper for a program and a device, started at its first build. Never destroyed: when this
// process ends, the helpers' stdin ends and they exit.
Helper& helper_for(const std::string& program, const IsolatedTarget& t) {
    static std::mutex mutex;
    static auto* helpers = new std::map<std::string, std::unique_ptr<Helper>>();
    std::lock_guard lock(mutex);
    auto& helper = (*helpers)[program + '\n' + t.device_id];
    if (!helper)
        helper = std::make_unique<Helper>(std::vector<std::string>{
            program, "--serve", t.platform_name, t.device_name, t.driver_version});
    return *helper;
}

// The key of the verdict on (device, toolchain, source): a note beside the kernel cache's entries.
std::string verdict_key(const IsolatedTarget& t, const std::string& source,
                        std::string_view options) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, source.data(), source.size());
    XXH3_64bits_update(state, t.toolchain_id.data(), t.toolchain_id.size() + 1);
    XXH3_64bits_update(state, options.data(), options.size());
    const uint64_t h = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return fmt::format("{:016x}", h);
}

// The directory of the running program ("" if unknown).
fs::path own_directory() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

}  // namespace

bool isolate_builds(std::string_view platform_short_name) {
    if (const char* env = std::getenv("KILN_OPENCL_ISOLATE"); env && *env)
        return std::string_view(env) != "0";
    return platform_short_name == "pocl";
}

std::string probe_executable() {
    if (const char* env = std::getenv("KILN_OPENCL_PROBE"); env && *env) return env;
    std::vector<fs::path> candidates;
    if (const fs::path dir = own_directory(); !dir.empty())
        candidates.push_back(dir / "kiln-opencl-probe");
#ifdef KILN_OPENCL_PROBE_INSTALLED
    candidates.emplace_back(KILN_OPENCL_PROBE_INSTALLED);
#endif
#ifdef KILN_OPENCL_PROBE_BUILT
    candidates.emplace_back(KILN_OPENCL_PROBE_BUILT);
#endif
    for (const fs::path& c : candidates)
        if (::access(c.c_str(), X_OK) == 0) return c.string();
    return "";
}

std::optional<std::vector<uint8_t>> build_isolated(const IsolatedTarget& target,
                                                   const std::string& source,
                                                   std::string_view options) {
    auto& disk = cache::process_kernel_cache();
    const std::string key = verdict_key(target, source, options);
    if (const auto verdict = disk.load_note(target.device_id, key))
        fail(
            "the OpenCL compiler of {} crashed on this source in an earlier run ({}); kept in {} "
            "(delete it to try again)",
            target.device_id, tail(*verdict), disk.note_path(target.device_id, key).string());
    const std::string helper = probe_executable();
    if (helper.empty()) {
        warn_once("opencl-probe",
                  "kiln-opencl-probe not found (set KILN_OPENCL_PROBE to its path); OpenCL builds "
                  "run in this process, where a compiler crash ends it");
        return std::nullopt;
    }
    Helper& h = helper_for(helper, target);
    const Outcome r = h.build(options, source);
    if (r.replied && r.status == 0) return std::vector<uint8_t>(r.bytes.begin(), r.bytes.end());
    if (r.replied && r.status == 2)  // the same words as a build in this process
        fail("OpenCL build of OpenCL C source for {} failed: {}\nbuild log:\n{}",
             target.device_name, cl_error_text(CL_BUILD_PROGRAM_FAILURE), tail(r.bytes));
    if (r.replied)
        fail("kiln-opencl-probe ({}) could not build: {}", cpu::command_line(h.argv()),
             tail(r.bytes));
    if (r.signal != 0 || r.timed_out) {
        const char* abbrev = ::sigabbrev_np(r.signal);
        const std::string what =
            r.timed_out
                ? fmt::format("hung (killed after {} minutes)", kBuildTimeout.count())
                : fmt::format("crashed with signal {} (SIG{})", r.signal, abbrev ? abbrev : "?");
        // A crash is the compiler's verdict on this source; a timeout may be a loaded machine.
        if (!r.timed_out)
            disk.store_note(target.device_id, key, fmt::format("{}: {}", what, tail(r.output)));
        fail("the OpenCL compiler of {} {} in a child process ({}); output:\n{}", target.device_id,
             what, cpu::command_line(h.argv()), tail(r.output));
    }
    fail("kiln-opencl-probe ({}) exited with status {}: {}", cpu::command_line(h.argv()),
         r.exit_status, tail(r.output));
}

}  // namespace kiln::runtime::opencl
