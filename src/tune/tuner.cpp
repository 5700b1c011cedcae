// Tuner: cached winners per device, in memory and in one append-only TSV file per device.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "cache/paths.hpp"
#include "kiln/tune.hpp"
#include "tune/tsv.hpp"

namespace kiln {
namespace {

// Appends `line` to `path` with one write() on an O_APPEND descriptor, so lines racing from
// other processes never interleave. Writers hold an flock() while they look at the last byte and
// write, so a line left torn by a writer that died mid-line is ended with a newline first —
// decided under the lock, never from a racing reader's view. Returns an error text or "".
std::string append_line(const std::filesystem::path& path, const std::string& line) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message());
    const int fd = ::open(path.c_str(), O_APPEND | O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) return fmt::format("cannot open {}: {}", path.string(), std::strerror(errno));
    ::flock(fd, LOCK_EX);  // advisory; if it fails the single O_APPEND write still holds
    std::string text = line;
    struct stat st {};
    char last = '\n';
    if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) == 1 &&
        last != '\n')
        text.insert(text.begin(), '\n');
    const ssize_t n = ::write(fd, text.data(), text.size());
    const int saved = errno;
    ::flock(fd, LOCK_UN);
    ::close(fd);
    if (n < 0) return fmt::format("cannot write {}: {}", path.string(), std::strerror(saved));
    if (static_cast<size_t>(n) != text.size())
        return fmt::format("short write to {} ({} of {} bytes)", path.string(), n, text.size());
    return "";
}

}  // namespace

Tuner::Tuner(std::filesystem::path root) : root_(std::move(root)) {}

Tuner& Tuner::process_default() {
    // One tuner per root, kept for the life of the process, so references stay valid when
    // KILN_CACHE_DIR changes between calls.
    static std::mutex mutex;
    static std::map<std::filesystem::path, std::unique_ptr<Tuner>> tuners;
    const auto root = cache::cache_root() / "autotune";
    std::lock_guard lock(mutex);
    auto& tuner = tuners[root];
    if (!tuner) tuner = std::make_unique<Tuner>(root);
    return *tuner;
}

std::filesystem::path Tuner::file_for(const std::string& device_id) const {
    return root_ / (cache::safe_component(device_id) + ".tsv");
}

Tuner::DeviceTable& Tuner::table(const std::string& device_id) {
    DeviceTable& t = tables_[device_id];
    if (t.loaded) return t;
    t.loaded = true;
    std::ifstream in(file_for(device_id), std::ios::binary);
    if (!in) return t;  // no file yet: nothing cached
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    tune::ParsedTsv parsed = tune::parse_tsv(text);
    t.skipped = parsed.skipped;
    for (auto& e : parsed.lines) {
        t.winners[{e.op, e.key}] = e.winner;
        t.order.push_back(std::move(e));
    }
    return t;
}

std::optional<std::string> Tuner::winner(const std::string& device_id, const std::string& op,
                                         const std::string& key) {
    tune::check_field("op", op);
    tune::check_field("key", key);
    std::lock_guard lock(mutex_);
    const DeviceTable& t = table(device_id);
    if (auto it = t.winners.find({op, key}); it != t.winners.end()) return it->second;
    return std::nullopt;
}

void Tuner::record(const std::string& device_id, const std::string& op, const std::string& key,
                   const std::string& winner) {
    const std::string line = tune::format_line(op, key, winner);
    std::lock_guard lock(mutex_);
    DeviceTable& t = table(device_id);
    t.winners[{op, key}] = winner;
    t.order.push_back({op, key, winner});
    const std::string err = append_line(file_for(device_id), line);
    if (!err.empty())
        warn_once("autotune-unwritable:" + root_.string(),
                  fmt::format("autotune cache under {} is not writable ({}); tuned winners are "
                              "kept in memory only",
                              root_.string(), err));
}

std::vector<TuneEntry> Tuner::entries(const std::string& device_id) {
    std::lock_guard lock(mutex_);
    const DeviceTable& t = table(device_id);
    // The last line of each (op, key), in the order those last lines appear.
    std::set<std::pair<std::string, std::string>> seen;
    std::vector<TuneEntry> out;
    for (auto it = t.order.rbegin(); it != t.order.rend(); ++it)
        if (seen.insert({it->op, it->key}).second) out.push_back(*it);
    return {out.rbegin(), out.rend()};
}

uint64_t Tuner::skipped_lines(const std::string& device_id) {
    std::lock_guard lock(mutex_);
    return table(device_id).skipped;
}

void Tuner::clear(const std::string& device_id) {
    std::lock_guard lock(mutex_);
    std::error_code ec;
    if (!device_id.empty()) {
        std::filesystem::remove(file_for(device_id), ec);
        tables_.erase(device_id);
        return;
    }
    std::vector<std::filesystem::path> files;
    for (std::filesystem::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".tsv") files.push_back(it->path());
    for (const auto& f : files) std::filesystem::remove(f, ec);
    tables_.clear();
}

TuneCounters Tuner::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

void Tuner::count_run(int benched, bool hit, bool retuned) {
    std::lock_guard lock(mutex_);
    counters_.benched += static_cast<uint64_t>(benched);
    if (hit)
        ++counters_.hits;
    else
        ++counters_.misses;
    if (retuned) ++counters_.retunes;
}

}  // namespace kiln
