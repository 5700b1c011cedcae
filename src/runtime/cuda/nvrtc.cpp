// Finds libnvrtc with dlopen, once per process, and compiles CUDA C sources to cubins with it.
#include "runtime/cuda/nvrtc.hpp"

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "kiln/error.hpp"

#ifdef KILN_HAVE_CUDA_HEADERS
#include <dlfcn.h>
#include <nvrtc.h>
#endif

namespace kiln::cuda {

std::vector<std::string> nvrtc_options(const std::string& arch) {
    return {
        "--gpu-architecture=" + arch, "--fmad=false", "--prec-div=true",
        "--prec-sqrt=true",           "--ftz=false",  "--std=c++17",
    };
}

#ifndef KILN_HAVE_CUDA_HEADERS

namespace {
constexpr std::string_view kNoHeaders = "kiln was built without the CUDA toolkit headers";
}

bool nvrtc_available(std::string* reason) {
    if (reason != nullptr) *reason = fmt::format("NVRTC unavailable: {}", kNoHeaders);
    return false;
}

std::string nvrtc_version() {
    fail("NVRTC unavailable: {}", kNoHeaders);
}

std::vector<uint8_t> nvrtc_compile(const std::string&, const std::string&, std::string*) {
    fail("NVRTC unavailable: {}", kNoHeaders);
}

#else

namespace {

struct NvrtcApi {
    decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
    decltype(&::nvrtcVersion) version = nullptr;
    decltype(&::nvrtcCreateProgram) create_program = nullptr;
    decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
    decltype(&::nvrtcCompileProgram) compile_program = nullptr;
    decltype(&::nvrtcGetProgramLogSize) get_program_log_size = nullptr;
    decltype(&::nvrtcGetProgramLog) get_program_log = nullptr;
    decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
    decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
};

struct Loaded {
    NvrtcApi api;
    bool ok = false;
    std::string reason;
    std::string version;  // "13.0"
};

// Library names tried in order, first through the loader's search path, then in the usual
// toolkit directories.
std::vector<std::string> candidates() {
    const std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    std::vector<std::string> dirs;
    if (const char* cuda_path = std::getenv("CUDA_PATH"); cuda_path != nullptr && *cuda_path) {
        dirs.push_back(std::string(cuda_path) + "/lib64");
    }
    dirs.push_back("/usr/local/cuda/lib64");
    dirs.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
    std::vector<std::string> out = names;
    for (const std::string& dir : dirs) {
        for (const std::string& name : names) out.push_back(dir + "/" + name);
    }
    return out;
}

template <typename Fn>
bool find(void* library, Fn& fn, const char* symbol, Loaded& loaded) {
    fn = reinterpret_cast<Fn>(dlsym(library, symbol));
    if (fn == nullptr) loaded.reason = fmt::format("NVRTC unavailable: libnvrtc has no {}", symbol);
    return fn != nullptr;
}

Loaded load() {
    Loaded loaded;
    void* library = nullptr;
    std::string first_error;
    for (const std::string& candidate : candidates()) {
        dlerror();
        library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library != nullptr) break;
        if (first_error.empty()) {
            const char* error = dlerror();
            first_error = error != nullptr ? error : candidate;
        }
    }
    if (library == nullptr) {
        loaded.reason = fmt::format("NVRTC not found: {}", first_error);
        return loaded;
    }
    // The library stays open for the life of the process.
    NvrtcApi& a = loaded.api;
    if (!find(library, a.get_error_string, "nvrtcGetErrorString", loaded) ||
        !find(library, a.version, "nvrtcVersion", loaded) ||
        !find(library, a.create_program, "nvrtcCreateProgram", loaded) ||
        !find(library, a.destroy_program, "nvrtcDestroyProgram", loaded) ||
        !find(library, a.compile_program, "nvrtcCompileProgram", loaded) ||
        !find(library, a.get_program_log_size, "nvrtcGetProgramLogSize", loaded) ||
        !find(library, a.get_program_log, "nvrtcGetProgramLog", loaded) ||
        !find(library, a.get_cubin_size, "nvrtcGetCUBINSize", loaded) ||
        !find(library, a.get_cubin, "nvrtcGetCUBIN", loaded)) {
        return loaded;
    }
    int major = 0, minor = 0;
    if (nvrtcResult r = a.version(&major, &minor); r != NVRTC_SUCCESS) {
        loaded.reason =
            fmt::format("NVRTC unavailable: nvrtcVersion failed: {}", a.get_error_string(r));
        return loaded;
    }
    loaded.version = fmt::format("{}.{}", major, minor);
    loaded.ok = true;
    return loaded;
}

const Loaded& loaded() {
    static const Loaded instance = load();
    return instance;
}

const NvrtcApi& api() {
    const Loaded& l = loaded();
    if (!l.ok) throw Error(l.reason);
    return l.api;
}

// Destroys an NVRTC program when the compilation ends, however it ends.
class Program {
  public:
    Program(const NvrtcApi& api, const std::string& source) : api_(api) {
        nvrtcResult r =
            api_.create_program(&program_, source.c_str(), "kiln_kernel.cu", 0, nullptr, nullptr);
        if (r != NVRTC_SUCCESS) {
            fail("NVRTC could not create a program: {}", api_.get_error_string(r));
        }
    }
    ~Program() { api_.destroy_program(&program_); }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    nvrtcProgram get() const { return program_; }

  private:
    const NvrtcApi& api_;
    nvrtcProgram program_ = nullptr;
};

std::string program_log(const NvrtcApi& a, nvrtcProgram program) {
    size_t size = 0;
    if (a.get_program_log_size(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (a.get_program_log(program, log.data()) != NVRTC_SUCCESS) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

}  // namespace

bool nvrtc_available(std::string* reason) {
    const Loaded& l = loaded();
    if (!l.ok && reason != nullptr) *reason = l.reason;
    return l.ok;
}

std::string nvrtc_version() {
    api();
    return loaded().version;
}

std::vector<uint8_t> nvrtc_compile(const std::string& source, const std::string& arch,
                                   std::string* log) {
    const NvrtcApi& a = api();
    if (arch.rfind("sm_", 0) != 0) fail("NVRTC target must look like \"sm_90\", got \"{}\"", arch);
    Program program(a, source);
    const std::vector<std::string> options = nvrtc_options(arch);
    std::vector<const char*> option_pointers;
    for (const std::string& option : options) option_pointers.push_back(option.c_str());
    nvrtcResult r = a.compile_program(program.get(), static_cast<int>(option_pointers.size()),
                                      option_pointers.data());
    std::string text = program_log(a, program.get());
    if (log != nullptr) *log = text;
    if (r != NVRTC_SUCCESS) {
        fail("NVRTC {} failed to compile the kernel for {}: {}\n{}", loaded().version, arch,
             a.get_error_string(r), text.empty() ? "(no compiler log)" : text);
    }
    size_t size = 0;
    r = a.get_cubin_size(program.get(), &size);
    if (r != NVRTC_SUCCESS) fail("nvrtcGetCUBINSize failed: {}", a.get_error_string(r));
    if (size == 0) fail("NVRTC produced no cubin for {} (is it a real architecture?)", arch);
    std::vector<uint8_t> cubin(size);
    r = a.get_cubin(program.get(), reinterpret_cast<char*>(cubin.data()));
    if (r != NVRTC_SUCCESS) fail("nvrtcGetCUBIN failed: {}", a.get_error_string(r));
    return cubin;
}

#endif  // KILN_HAVE_CUDA_HEADERS

}  // namespace kiln::cuda
