// Loads libcuda.so.1 once per process and turns driver error codes into kiln::Error.
#include "runtime/cuda/driver_api.hpp"

#ifdef KILN_HAVE_CUDA_HEADERS

#include <dlfcn.h>

#include <fmt/format.h>

#include "kiln/error.hpp"

namespace kiln::cuda {
namespace {

#define KILN_CUDA_STRINGIFY_EXPANDED(x) KILN_CUDA_STRINGIFY(x)
#define KILN_CUDA_STRINGIFY(x) #x

struct Loaded {
    DriverApi api;
    bool ok = false;
    std::string reason;
};

// Finds `versioned` (the symbol cuda.h maps the name to), else the plain name: drivers older
// than the headers may lack a newer version of a function whose signature did not change.
void* find_symbol(void* library, const char* versioned, const char* plain) {
    if (void* p = dlsym(library, versioned)) return p;
    return dlsym(library, plain);
}

Loaded load() {
    Loaded loaded;
    dlerror();
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* error = dlerror();
        loaded.reason = fmt::format("CUDA unavailable: libcuda.so.1 not found: {}",
                                    error != nullptr ? error : "unknown dlopen error");
        return loaded;
    }
    // The library stays open for the life of the process: devices may outlive any owner.
    DriverApi& api = loaded.api;
#define KILN_CUDA_LOAD_MEMBER(fn)                                                                \
    api.fn = reinterpret_cast<decltype(api.fn)>(                                                 \
        find_symbol(library, KILN_CUDA_STRINGIFY_EXPANDED(fn), #fn));                            \
    if (api.fn == nullptr) {                                                                     \
        loaded.reason = fmt::format("CUDA unavailable: libcuda.so.1 has no {} (driver too old)", \
                                    KILN_CUDA_STRINGIFY_EXPANDED(fn));                           \
        return loaded;                                                                           \
    }
    KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_LOAD_MEMBER)
#undef KILN_CUDA_LOAD_MEMBER

    CUresult result = api.cuInit(0);
    if (result != CUDA_SUCCESS) {
        const char* name = nullptr;
        if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
            loaded.reason =
                fmt::format("CUDA unavailable: cuInit failed: error {}", static_cast<int>(result));
        } else {
            loaded.reason = fmt::format("CUDA unavailable: cuInit failed: {}", name);
        }
        return loaded;
    }
    loaded.ok = true;
    return loaded;
}

const Loaded& loaded() {
    static const Loaded instance = load();
    return instance;
}

}  // namespace

const DriverApi* driver_api(std::string* reason) {
    const Loaded& l = loaded();
    if (!l.ok) {
        if (reason != nullptr) *reason = l.reason;
        return nullptr;
    }
    return &l.api;
}

const DriverApi& driver() {
    std::string reason;
    const DriverApi* api = driver_api(&reason);
    if (api == nullptr) throw Error(reason);
    return *api;
}

std::string describe(CUresult result) {
    const DriverApi& api = driver();
    const char* name = nullptr;
    const char* text = nullptr;
    if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
        return fmt::format("unknown CUDA error {}", static_cast<int>(result));
    }
    if (api.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) return name;
    return fmt::format("{} ({})", name, text);
}

void check(CUresult result, std::string_view what) {
    if (result == CUDA_SUCCESS) return;
    fail("CUDA error in {}: {}", what, describe(result));
}

}  // namespace kiln::cuda

#endif  // KILN_HAVE_CUDA_HEADERS
