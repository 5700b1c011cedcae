// kernel_memo: maps from an op's variant key to its IR, identity and compiled kernels.
#include "ops/kernel_memo.hpp"

#include <map>
#include <mutex>

namespace kiln::ops {
namespace {

struct Entry {
    ir::Kernel kernel;
    std::map<Backend, std::string> identities;
    std::map<const Device*, std::shared_ptr<CompiledKernel>> compiled;
};

std::mutex memo_mutex;
std::map<std::string, std::unique_ptr<Entry>> memo;

Entry& entry(const std::string& key, const std::function<ir::Kernel()>& build) {
    // Called with memo_mutex held.
    auto& e = memo[key];
    if (!e) e = std::make_unique<Entry>(Entry{build(), {}, {}});
    return *e;
}

}  // namespace

const ir::Kernel& memo_kernel(const std::string& key, const std::function<ir::Kernel()>& build) {
    std::lock_guard lock(memo_mutex);
    return entry(key, build).kernel;
}

const std::string& memo_identity(const std::string& key, const std::function<ir::Kernel()>& build,
                                 Backend backend) {
    std::lock_guard lock(memo_mutex);
    Entry& e = entry(key, build);
    auto it = e.identities.find(backend);
    if (it == e.identities.end())
        it = e.identities.emplace(backend, kernel_identity(backend, e.kernel)).first;
    return it->second;
}

const VariantTable& memo_variant_table(const std::string& set_key, Backend backend,
                                       std::string_view op,
                                       const std::function<std::vector<NamedKernel>()>& variants) {
    static std::mutex tables_mutex;
    static std::map<std::pair<std::string, Backend>, std::unique_ptr<VariantTable>> tables;
    std::lock_guard lock(tables_mutex);
    if (auto it = tables.find({set_key, backend}); it != tables.end()) return *it->second;
    // Complete before it is kept: a build that throws keeps nothing.
    std::vector<std::string> names, ids;
    for (const NamedKernel& v : variants()) {
        names.push_back(v.name);
        ids.push_back(memo_identity(v.key, v.build, backend));
    }
    auto table = std::make_unique<VariantTable>(op, std::move(names), std::move(ids));
    return *tables.emplace(std::make_pair(set_key, backend), std::move(table)).first->second;
}

std::shared_ptr<CompiledKernel> memo_compiled(Device& device, const std::string& key,
                                              const std::function<ir::Kernel()>& build) {
    const ir::Kernel* kernel;
    {
        std::lock_guard lock(memo_mutex);
        Entry& e = entry(key, build);
        if (auto it = e.compiled.find(&device); it != e.compiled.end()) return it->second;
        kernel = &e.kernel;  // entries are never removed: the pointer stays valid
    }
    auto compiled = compile(device, *kernel);  // outside the lock: compiling takes a while
    std::lock_guard lock(memo_mutex);
    return memo[key]->compiled.emplace(&device, compiled).first->second;
}

}  // namespace kiln::ops
