// Autotuning as three plain values (the paper "The Schedule Is a Value"):
//
//   auto y = kiln::Tuned("rms_norm", fmt::format("rows={},n={}", rows, n))
//       .variant("b64_r1", [&](int iters) { return rms_norm_bench(dev, x, w, ..., iters); })
//       .variant("b128_r1", ...)
//       .run(tuner);  // .run() uses the process-default tuner
//
// Variant: a name and a closure iters -> {output, ms per dispatch}. The same closure benchmarks
//   (iters = TUNE_ITERS: warm-up, then iters timed dispatches) and executes (iters = 1: exactly one
//   launch, no warm-up, no re-upload), so timing and running cannot disagree.
// Tuned: the fluent builder for one (op, key) on one device.
// Tuner: (device, op, key) -> winner, in memory and in one append-only TSV per device,
//   <root>/<device-id>.tsv, lines "op\tkey\twinner"; the last line for a key wins.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"

namespace kiln {

inline constexpr int TUNE_ITERS = 25;
// A challenger replaces the first-declared variant only when it is faster by this fraction.
inline constexpr double TUNE_MARGIN = 0.03;

// What a variant's closure returns: its output and the milliseconds one dispatch took.
template <typename Out>
struct Timed {
    Out output;
    double ms = 0;
};

// The timing protocol variants share. iters == 1: `launch` runs once (`before_each` first, if
// given), untimed and not waited for, and 0 is returned — what a tuner hit costs: one launch,
// asynchronous like any other (reading the output waits for it). iters > 1: warm-up launches,
// then `iters` launches each timed on the device with `before_each` (untimed) before it and, on
// GPUs, the L2 cache flushed (untimed) before it; returns the median ms per dispatch. The untimed
// work is queued ahead of the launch without waiting for it, so a GPU's clock counts the
// device's time for the launch, not the host's time to submit it. The flush writes a 256 MiB
// scratch buffer, as triton's do_bench does, which leaves the L2 full of dirty lines whose
// write-back a read-mostly kernel then pays for; KILN_L2_FLUSH=read reads it instead (a clean,
// cold L2). Any other value is a kiln::Error.
// `before_each` restores scratch inputs for variants that write their inputs.
double time_dispatches(Device& device, int iters, const std::function<void()>& launch,
                       const std::function<void()>& before_each = {});
// time_dispatches (iters > 1) within about `budget_ms` of the device's time: warm-up launches
// while fewer than its three and under a quarter of the budget, then timed ones until `iters` or
// the budget is spent, at least three (a launch longer than the budget takes four in all).
double time_dispatches_within(Device& device, int iters, double budget_ms,
                              const std::function<void()>& launch,
                              const std::function<void()>& before_each = {});
// time_dispatches_within for several launches at once (iters >= 2), each with its own budget,
// timed in rounds of one run of each so that a slow stretch of a shared machine falls on all of
// them alike; each one's median, in order. How a graph's first run races its points.
std::vector<double> time_dispatches_in_turns(Device& device, int iters, double budget_ms,
                                             const std::vector<std::function<void()>>& launches,
                                             const std::function<void()>& before_each = {});

// Counters tests and tools read. `benched` counts variants timed; the rest count run() calls.
struct TuneCounters {
    uint64_t benched = 0;  // variants benched in total
    uint64_t hits = 0;     // run()s answered from the cache (memory or disk)
    uint64_t misses = 0;   // run()s that benched every variant (re-tunes included)
    uint64_t retunes = 0;  // misses where a cached winner was no longer offered
};

// The outcome of one Tuned::run, for tables and --json.
struct TuneReport {
    std::string op;
    std::string key;  // the full key, with the variant-set digest
    std::string device_id;
    std::string winner;
    int benched = 0;  // variants benched by this run (0 on a hit)
    bool hit = false;
    bool retuned = false;
    std::filesystem::path cache_file;
    std::vector<std::pair<std::string, double>> variant_ms;  // on a miss, each variant's median
};

// A line of a device's TSV, as loaded.
struct TuneEntry {
    std::string op, key, winner;
};

class Tuner {
  public:
    // A tuner over an explicit root directory (created 0700 when first written). An empty root,
    // or one that is not the user's own (owned by someone else, writable by group or others:
    // one warning), keeps winners in memory only.
    explicit Tuner(std::filesystem::path root);
    ~Tuner();
    // The process default, rooted at $KILN_CACHE_DIR/autotune, else $XDG_CACHE_HOME/kiln/autotune,
    // else ~/.cache/kiln/autotune; in memory only when none is set.
    static Tuner& process_default();

    const std::filesystem::path& root() const { return root_; }
    std::filesystem::path file_for(const std::string& device_id) const;  // <root>/<device-id>.tsv

    // The cached winner of (device, op, key), loading the device's file on first use. A file
    // that is not a regular file (a symbolic link, a directory, a FIFO, a device) is never read
    // or written: the device's winners stay in memory, after one warning. A file whose dead
    // lines dominate is compacted as it loads.
    std::optional<std::string> winner(const std::string& device_id, const std::string& op,
                                      const std::string& key);
    // Records a winner in memory and appends its line to the device's file (one O_APPEND
    // write). A tab or newline in op or key is a kiln::Error. An unwritable directory keeps the
    // winner in memory only and warns once.
    void record(const std::string& device_id, const std::string& op, const std::string& key,
                const std::string& winner);

    // The effective entries of a device's file (last line per (op, key)), in file order.
    std::vector<TuneEntry> entries(const std::string& device_id);
    // Lines of the device's file that were torn, blank or malformed when it was loaded.
    uint64_t skipped_lines(const std::string& device_id);
    // Removes the device's file (or, when device_id is empty, every <device-id>.tsv under the
    // root) where it looks like a TSV kiln wrote, its side files, kiln's stale temporaries, and
    // forgets what was loaded. Anything else is left in place, its path appended to `left_alone`
    // when given. Returns how many files it removed. kiln::Error when the root is not the user's
    // own.
    uint64_t clear(const std::string& device_id = "",
                   std::vector<std::filesystem::path>* left_alone = nullptr);

    // A small file kept beside the device's TSV, <root>/<device-id>.<kind> (the cost model keeps
    // its measured device facts as kind "facts"), under the TSV's rules: only in a root that is
    // the user's own, never through a symbolic link nor from anything but a regular file (one
    // warning naming the path; nothing is then written there), at most 64 KiB, written
    // atomically (mode 0600, the root created 0700). Its first line, "# kiln <kind>", marks it as
    // kiln's: a file without it reads as absent, and clear() removes the device's side files
    // that have it. Without a usable root nothing is read or written.
    std::filesystem::path side_file_for(const std::string& device_id,
                                        const std::string& kind) const;
    std::optional<std::string> read_side_file(const std::string& device_id,
                                              const std::string& kind);
    void write_side_file(const std::string& device_id, const std::string& kind,
                         const std::string& text);

    TuneCounters counters() const;
    void count_run(int benched, bool hit, bool retuned);

  private:
    struct DeviceTable;
    DeviceTable& table(const std::string& device_id);
    // Whether the root (and the cache root above it, for the process default) may be used.
    bool disk_usable();
    // Creates the root (0700) when it may be used; returns why it cannot be written, or "".
    std::string writable_root();
    // Warns once that the root cannot be written (`err`): kept in memory only.
    void warn_unwritable(const std::string& err) const;

    std::filesystem::path root_;
    std::filesystem::path trusted_parent_;  // the cache root, checked too when set
    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<DeviceTable>> tables_;
    bool swept_ = false;  // stale temporaries under the root removed
    TuneCounters counters_;
};

// A short digest of a variant set: each variant's name and identity (e.g. kernel_identity of
// the kernels it launches), so changed code is a different key and re-tunes.
std::string variant_digest(const std::vector<std::pair<std::string, std::string>>& names_and_ids);

// variant_digest built up one variant at a time: start from kVariantDigestStart, fold each
// (name, identity) in declaration order with variant_digest_add, then variant_digest_text.
inline constexpr uint64_t kVariantDigestStart = 0;
uint64_t variant_digest_add(uint64_t digest, std::string_view name, std::string_view identity);
std::string variant_digest_text(uint64_t digest);

// A variant set's names and identities, checked and digested once, for an op that declares the
// same set on every call (Tuned::variants(table, make)): a hit then neither checks names nor
// hashes them. Names must be unique and free of tabs and newlines (kiln::Error naming `op`).
class VariantTable {
  public:
    VariantTable(std::string_view op, std::vector<std::string> names,
                 std::vector<std::string> identities);
    size_t size() const { return names_.size(); }
    const std::string& name(size_t i) const { return names_[i]; }
    const std::string& identity(size_t i) const { return identities_[i]; }
    // variant_digest_add folded over the set from kVariantDigestStart.
    uint64_t digest() const { return digest_; }

  private:
    std::vector<std::string> names_, identities_;
    uint64_t digest_ = kVariantDigestStart;
};

// The check every variant name passes: non-empty, no tab or newline (kiln::Error naming `op`).
void check_variant_name(std::string_view op, std::string_view name);

template <typename Out = Buffer>
class Tuned {
  public:
    using Closure = std::function<Timed<Out>(int)>;

    Tuned(std::string op, std::string key, Device& device = best_device())
        : op_(std::move(op)), key_(std::move(key)), device_(&device) {}

    // Adds a variant. `identity` names what the variant runs (kernel_identity); it goes into the
    // key's digest. Names must be unique and free of tabs and newlines.
    Tuned& variant(std::string name, Closure run, std::string_view identity = {}) {
        add(std::move(name), identity).run = std::move(run);
        return *this;
    }

    // Adds `count` variants whose closures are made only when they run: a hit makes the
    // winner's alone, a miss every one. Variant i is named name(i) and has identity(i) (both read
    // during this call, checked and digested as variant() does); make(i) returns its closure.
    // The digest is the one the same variants declared one by one would give.
    Tuned& variants(size_t count, const std::function<std::string_view(size_t)>& name,
                    const std::function<std::string_view(size_t)>& identity,
                    std::function<Closure(size_t)> make) {
        makers_.push_back(std::move(make));
        for (size_t i = 0; i < count; ++i) {
            Entry& e = add(std::string(name(i)), identity(i));
            e.maker = makers_.size() - 1;
            e.index = i;
        }
        return *this;
    }

    // Adds the table's variants, whose closures are made only when they run (as above): the
    // table's names and digest serve as they are, so the table must outlive this Tuned. The key
    // is the one the same variants declared one by one would give.
    Tuned& variants(const VariantTable& table, std::function<Closure(size_t)> make) {
        if (!variants_.empty())  // the table's digest starts from an empty set
            return variants(
                table.size(), [&](size_t i) -> std::string_view { return table.name(i); },
                [&](size_t i) -> std::string_view { return table.identity(i); }, std::move(make));
        makers_.push_back(std::move(make));
        variants_.reserve(table.size());
        for (size_t i = 0; i < table.size(); ++i)
            variants_.push_back({{}, &table.name(i), {}, makers_.size() - 1, i});
        digest_ = table.digest();
        return *this;
    }

    // Miss: benches every variant (TUNE_ITERS dispatches each), keeps the fastest by median
    // (the first-declared unless a challenger beats it by TUNE_MARGIN), records it, returns its
    // output already computed. Hit: runs only the winner, once.
    Out run(Tuner& tuner);
    Out run() { return run(Tuner::process_default()); }

    // Called after each variant is benched on a miss, with its name and median ms (progress).
    Tuned& on_benched(std::function<void(const std::string&, double)> callback) {
        on_benched_ = std::move(callback);
        return *this;
    }

    const TuneReport& report() const { return report_; }
    // The key as stored: the caller's key and the variant-set digest, "rows=1,n=4096#1a2b3c4d".
    std::string full_key() const;

  private:
    static constexpr size_t kMadeAlready = static_cast<size_t>(-1);
    struct Entry {
        std::string owned;  // the name, unless a VariantTable holds it
        const std::string* in_table = nullptr;
        Closure run;                  // empty until made, for variants()
        size_t maker = kMadeAlready;  // index into makers_
        size_t index = 0;             // the variant's index in its maker's table
        const std::string& name() const { return in_table ? *in_table : owned; }
    };

    // Checks a new variant's name, folds it into the digest and appends its entry.
    Entry& add(std::string name, std::string_view identity) {
        check_variant_name(op_, name);
        for (const auto& v : variants_)
            if (v.name() == name) fail("tuned op {}: two variants named '{}'", op_, name);
        digest_ = variant_digest_add(digest_, name, identity);
        variants_.push_back({std::move(name)});
        return variants_.back();
    }
    // The variant's closure, made now if it has not been.
    const Closure& closure(Entry& e) {
        if (e.maker != kMadeAlready) {
            e.run = makers_[e.maker](e.index);
            e.maker = kMadeAlready;
        }
        return e.run;
    }

    std::string op_, key_;
    Device* device_;
    std::vector<Entry> variants_;
    std::vector<std::function<Closure(size_t)>> makers_;
    uint64_t digest_ = kVariantDigestStart;  // of the variants so far
    TuneReport report_;
    std::function<void(const std::string&, double)> on_benched_;
};

// Chooses the winner among measured medians: the fastest, unless the first-declared variant is
// within `margin` of it. Exposed for tests.
size_t choose_winner(const std::vector<double>& medians, double margin = TUNE_MARGIN);

template <typename Out>
std::string Tuned<Out>::full_key() const {
    return key_ + "#" + variant_digest_text(digest_);
}

template <typename Out>
Out Tuned<Out>::run(Tuner& tuner) {
    if (variants_.empty()) fail("tuned op {} ({}): no variants to choose from", op_, key_);
    const std::string device_id = device_->info().id;
    const std::string key = full_key();
    report_ = TuneReport{op_, key, device_id, "", 0, false, false, tuner.file_for(device_id), {}};
    if (auto cached = tuner.winner(device_id, op_, key)) {
        for (auto& v : variants_)
            if (v.name() == *cached) {
                report_.winner = v.name();
                report_.hit = true;
                tuner.count_run(0, true, false);
                return closure(v)(1).output;
            }
        report_.retuned = true;  // the cached winner is no longer offered
    }
    // Keep only the outputs that can still win: the first-declared and the fastest so far.
    std::optional<Out> first_output, fastest_output;
    size_t fastest = 0;
    std::vector<double> medians;
    for (size_t i = 0; i < variants_.size(); ++i) {
        Timed<Out> r = closure(variants_[i])(TUNE_ITERS);
        medians.push_back(r.ms);
        report_.variant_ms.emplace_back(variants_[i].name(), r.ms);
        if (on_benched_) on_benched_(variants_[i].name(), r.ms);
        if (i == 0) {
            first_output.emplace(std::move(r.output));
        } else if (fastest == 0 || r.ms < medians[fastest]) {
            fastest = i;
            fastest_output.emplace(std::move(r.output));
        }
    }
    const size_t best = choose_winner(medians);
    report_.winner = variants_[best].name();
    report_.benched = static_cast<int>(variants_.size());
    tuner.record(device_id, op_, key, report_.winner);
    tuner.count_run(report_.benched, false, report_.retuned);
    return best == 0 ? std::move(*first_output) : std::move(*fastest_output);
}

}  // namespace kiln
