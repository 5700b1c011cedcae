// Loading CPU kernel binaries from memory: memfd_create + dlopen("/proc/self/fd/N").
//
// glibc's dlopen first matches the requested name against objects already loaded, so a reused
// path (a recycled fd number, or an object kept resident after dlclose) would silently return an
// old module. Every load therefore checks that its path names no loaded object, and picks another
// descriptor or file name when it does.
#include "runtime/cpu/cpu_module.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kiln/error.hpp"

namespace kiln::runtime::cpu {
namespace {

std::mutex& load_mutex() {
    static std::mutex mutex;
    return mutex;
}

bool name_is_loaded(const std::string& path) {
    struct Search {
        const std::string* path;
        bool found;
    } search{&path, false};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* s = static_cast<Search*>(data);
            if (info->dlpi_name && *s->path == info->dlpi_name) s->found = true;
            return s->found ? 1 : 0;
        },
        &search);
    return search.found;
}

void write_all(int fd, std::span<const uint8_t> bytes, const std::string& what) {
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            fail("CPU backend: cannot write a kernel binary to {}: {}", what, std::strerror(errno));
        done += static_cast<size_t>(n);
    }
}

std::string fd_path(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

// dlopens the binary through a memfd. Returns nullptr (with `error` set) on a load failure,
// and leaves `error` empty when memfd itself is unavailable.
void* open_from_memfd(std::span<const uint8_t> binary, std::string& error) {
    int fd = ::memfd_create("kiln-cpu-kernel", MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    std::vector<int> fds{fd};
    auto close_all = [&] {
        for (int f : fds) ::close(f);
    };
    try {
        write_all(fd, binary, "a memfd");
    } catch (...) {
        close_all();
        throw;
    }
    while (name_is_loaded(fd_path(fds.back()))) {
        int other = ::fcntl(fds.back(), F_DUPFD_CLOEXEC, 0);
        if (other < 0) break;
        fds.push_back(other);
    }
    void* handle = ::dlopen(fd_path(fds.back()).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = ::dlerror();
        error = e ? e : "unknown dlopen error";
    }
    close_all();
    return handle;
}

void* open_from_temp_file(std::span<const uint8_t> binary, std::string& error) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = (tmp && *tmp) ? tmp : "/tmp";
    for (int attempt = 0; attempt < 100; ++attempt) {
        std::string path = dir + "/kiln-cpu-kernel-XXXXXX.so";
        int fd = ::mkstemps(path.data(), 3);
        if (fd < 0)
            fail("CPU backend: cannot create a temporary file in {} to load a kernel: {}", dir,
                 std::strerror(errno));
        if (name_is_loaded(path)) {
            ::close(fd);  // keep the file so the name is not handed out again
            continue;
        }
        try {
            write_all(fd, binary, path);
        } catch (...) {
            ::close(fd);
            ::unlink(path.c_str());
            throw;
        }
        ::close(fd);
        void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* e = ::dlerror();
            error = e ? e : "unknown dlopen error";
        }
        ::unlink(path.c_str());
        return handle;
    }
    fail("CPU backend: could not find an unused temporary file name to load a kernel");
}

}  // namespace

CpuModule::CpuModule(std::span<const uint8_t> binary) {
    if (binary.empty()) fail("CPU backend: cannot load an empty kernel binary");
    std::lock_guard lock(load_mutex());
    std::string error;
    handle_ = open_from_memfd(binary, error);
    if (!handle_ && error.empty()) handle_ = open_from_temp_file(binary, error);
    if (!handle_)
        fail(
            "CPU backend: cannot load a kernel binary of {} bytes (not a shared object built for "
            "this host?): {}",
            binary.size(), error);
}

CpuModule::~CpuModule() {
    if (handle_) ::dlclose(handle_);
}

KernelEntry CpuModule::entry(const std::string& name) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    ::dlerror();
    void* symbol = ::dlsym(handle_, name.c_str());
    if (!symbol) fail("CPU backend: kernel entry '{}' not found in the loaded module", name);
    auto fn = reinterpret_cast<KernelEntry>(symbol);
    entries_.emplace(name, fn);
    return fn;
}

}  // namespace kiln::runtime::cpu
