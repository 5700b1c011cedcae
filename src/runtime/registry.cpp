// The process device registry: discovers every backend once (CPU, CUDA, OpenCL), records why a
// backend is unavailable, and finds devices by id, index or backend name.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/error.hpp"
#include "runtime/discover.hpp"

namespace kiln {
namespace {

using Discover = std::vector<std::unique_ptr<Device>> (*)(std::string*);

struct Registry {
    std::vector<std::unique_ptr<Device>> owned;
    std::vector<Device*> devices;
    std::vector<BackendStatus> status;
};

std::vector<std::string> disabled_backends() {
    std::vector<std::string> names;
    const char* env = std::getenv("KILN_DISABLE");
    if (!env) return names;
    std::string text = env;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        std::string item;
        for (char c : text.substr(start, end - start))
            if (!std::isspace(static_cast<unsigned char>(c)))
                item += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (!item.empty()) {
            if (item != "cpu" && item != "cuda" && item != "opencl")
                fail(
                    "KILN_DISABLE='{}' names an unknown backend '{}'; expected a comma-separated "
                    "list of cpu, cuda, opencl",
                    text, item);
            names.push_back(item);
        }
        start = end + 1;
    }
    return names;
}

Registry discover_all() {
    Registry r;
    std::vector<std::string> disabled = disabled_backends();
    const std::pair<Backend, Discover> backends[] = {
        {Backend::cpu, runtime::discover_cpu},
        {Backend::cuda, runtime::discover_cuda},
        {Backend::opencl, runtime::discover_opencl},
    };
    for (const auto& [backend, discover] : backends) {
        BackendStatus status{backend, false, ""};
        if (std::find(disabled.begin(), disabled.end(), name(backend)) != disabled.end()) {
            status.reason = "disabled by KILN_DISABLE";
            r.status.push_back(status);
            continue;
        }
        std::vector<std::unique_ptr<Device>> found;
        try {
            found = discover(&status.reason);
        } catch (const std::exception& e) {
            found.clear();
            status.reason = e.what();
        }
        std::erase(found, nullptr);
        status.available = !found.empty();
        if (status.available)
            status.reason.clear();
        else if (status.reason.empty())
            status.reason = "no devices found";
        for (auto& device : found) {
            r.devices.push_back(device.get());
            r.owned.push_back(std::move(device));
        }
        r.status.push_back(status);
    }
    return r;
}

const Registry& registry() {
    static const Registry r = discover_all();
    return r;
}

const BackendStatus& status_of(Backend b) {
    for (const BackendStatus& s : registry().status)
        if (s.backend == b) return s;
    fail("no status for backend {}", name(b));
}

Device* first_of(Backend b) {
    for (Device* d : registry().devices)
        if (d->info().backend == b) return d;
    return nullptr;
}

std::string available_list() {
    const auto& all = registry().devices;
    if (all.empty()) return "no devices are available";
    std::string out = "available devices:";
    for (size_t i = 0; i < all.size(); ++i) out += fmt::format(" [{}] {}", i, all[i]->info().id);
    return out;
}

}  // namespace

std::string_view name(Backend b) {
    switch (b) {
        case Backend::cpu:
            return "cpu";
        case Backend::cuda:
            return "cuda";
        case Backend::opencl:
            return "opencl";
    }
    return "unknown";
}

std::span<Device* const> devices() {
    return registry().devices;
}

std::span<const BackendStatus> backend_status() {
    return registry().status;
}

Device& cpu_device() {
    if (Device* d = first_of(Backend::cpu)) return *d;
    fail("the CPU device is unavailable: {}", status_of(Backend::cpu).reason);
}

Device& find_device(std::string_view which) {
    const auto& all = registry().devices;
    for (Device* d : all)
        if (d->info().id == which) return *d;
    if (!which.empty() &&
        std::all_of(which.begin(), which.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        size_t index = which.size() > 9 ? all.size() : std::stoul(std::string(which));
        if (index < all.size()) return *all[index];
        fail("no device with index {} ({} devices); {}", which, all.size(), available_list());
    }
    for (Backend b : {Backend::cpu, Backend::cuda, Backend::opencl}) {
        if (which != name(b)) continue;
        if (Device* d = first_of(b)) return *d;
        fail("no {} device: {}; {}", name(b), status_of(b).reason, available_list());
    }
    fail("no device '{}': expected a device id, an index or a backend name (cpu, cuda, opencl); {}",
         which, available_list());
}

Device& best_device() {
    if (Device* d = first_of(Backend::cuda)) return *d;
    for (Device* d : registry().devices)
        if (d->info().backend == Backend::opencl && d->info().arch.find("GPU") != std::string::npos)
            return *d;
    return cpu_device();
}

}  // namespace kiln
