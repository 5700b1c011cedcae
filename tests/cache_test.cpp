// The compiled-kernel caches: memory hits, disk hits in a second process, corrupt, truncated and
// misplaced entries rebuilt, an unwritable or untrusted cache directory working uncached with one
// warning, private directories, stale temporaries removed, and clearing only kiln's files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "cache/kernel_cache.hpp"
#include "cache/paths.hpp"
#include "cache/temp_dir.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"

extern char** environ;

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// A kernel unique to this test run, so earlier runs' cache entries never interfere.
ir::Kernel kernel_with(float constant) {
    KernelBuilder k("cache_probe", 32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = cast(DType::f32, i) * constant; });
    return k.finish();
}

float run_id() {
    static const float id = static_cast<float>(std::random_device{}() % 1000000) + 0.25f;
    return id;
}

class CacheTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // One directory per test: the process's warnings and sweeps are once per directory.
        root_ = fs::temp_directory_path() /
                fmt::format("kiln-cache-test-{}-{}", getpid(),
                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        setenv("KILN_CACHE_DIR", root_.c_str(), 1);
        clear_memory_cache();
    }
    void TearDown() override {
        unsetenv("KILN_CACHE_DIR");
        clear_memory_cache();
        fs::remove_all(root_);
    }

  public:
    static void check_runs(const CompiledKernel& k, float constant) {
        Buffer y(k.device(), DType::f32, 50);
        k.launch(2, {y});
        EXPECT_EQ(y.download<float>()[49], 49.0f * constant);
    }

  protected:
    std::vector<fs::path> entries() const {
        std::vector<fs::path> out;
        for (auto& e : fs::recursive_directory_iterator(root_))
            if (e.path().extension() == ".bin") out.push_back(e.path());
        return out;
    }
    fs::path root_;
};

TEST_F(CacheTest, MemoryThenDiskHits) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto first = compile(*d, kernel_with(run_id()));
        EXPECT_FALSE(first->info().disk_hit);
        EXPECT_GT(first->info().compile_ms, 0);
        EXPECT_EQ(compile(*d, kernel_with(run_id())).get(), first.get());  // memory hit
        clear_memory_cache();
        auto again = compile(*d, kernel_with(run_id()));
        EXPECT_TRUE(again->info().disk_hit);
        EXPECT_EQ(again->info().compile_ms, 0);
        check_runs(*again, run_id());
    }
    EXPECT_EQ(entries().size(), devices().size());
    for (const auto& e : entries())
        EXPECT_TRUE(e.string().starts_with((root_ / "kernels").string()));
}

TEST_F(CacheTest, AKernelListedTwiceIsCompiledOnce) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const ir::Kernel a = kernel_with(run_id() + 1), b = kernel_with(run_id() + 2);
        const std::vector<ir::Kernel> kernels = {a, b, a, kernel_with(run_id() + 1)};
        const auto compiled = compile_all(*d, kernels);
        ASSERT_EQ(compiled.size(), 4u);
        EXPECT_EQ(compiled[2].get(), compiled[0].get());
        EXPECT_EQ(compiled[3].get(), compiled[0].get());
        EXPECT_NE(compiled[1].get(), compiled[0].get());
        check_runs(*compiled[0], run_id() + 1);
        check_runs(*compiled[1], run_id() + 2);
    }
}

TEST_F(CacheTest, ManyKernelsOnTheCpuAreBuiltInUnitsOfAtMost48) {
    // 100 kernels: three compiler processes (48, 48, 4 kernels), run at once where the machine
    // has the threads; every kernel from its own unit's module.
    Device& d = cpu_device();
    std::vector<ir::Kernel> kernels;
    for (int i = 0; i < 100; ++i) kernels.push_back(kernel_with(run_id() + 10 + float(i)));
    const auto compiled = compile_all(d, kernels, {.optimize = false});
    std::map<std::string, int> per_unit;
    for (const auto& k : compiled) ++per_unit[k->info().cache_key];
    std::vector<int> sizes;
    for (const auto& [key, n] : per_unit) sizes.push_back(n);
    std::sort(sizes.begin(), sizes.end());
    EXPECT_EQ(sizes, (std::vector<int>{4, 48, 48}));
    EXPECT_EQ(entries().size(), 3u);
    for (int i = 0; i < 100; i += 33) check_runs(*compiled[size_t(i)], run_id() + 10 + float(i));
    check_runs(*compiled[99], run_id() + 109);
}

TEST_F(CacheTest, KernelsAnotherUnitHoldsAreTakenFromItWithoutBuilding) {
    // A race compiles three candidates in one unit; a later run asks for the winner alone, a
    // unit of its own the disk lacks: it comes from the racing run's unit, found through the
    // index notes, with nothing built; the winner checked, and a bad note, are misses and the
    // kernel is built.
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const float c = run_id() + 200;
        const std::vector<ir::Kernel> race = {kernel_with(c), kernel_with(c + 1),
                                              kernel_with(c + 2)};
        compile_all(*d, race);
        const size_t units = entries().size();
        clear_memory_cache();
        auto winner = compile(*d, kernel_with(c + 1));
        EXPECT_TRUE(winner->info().disk_hit);
        EXPECT_EQ(winner->info().compile_ms, 0);
        EXPECT_EQ(entries().size(), units);  // nothing new written
        check_runs(*winner, c + 1);
        // The same kernel checked is other code under the same entry: built, not taken from the
        // racing run's unit (whose entry takes no fault record).
        clear_memory_cache();
        auto checked = compile(*d, kernel_with(c + 1), {.check_bounds = true});
        EXPECT_FALSE(checked->info().disk_hit);
        check_runs(*checked, c + 1);
        for (auto& e : fs::recursive_directory_iterator(root_))
            if (e.path().extension() == cache::kIndexSuffix) std::ofstream(e.path()) << "../../x";
        clear_memory_cache();
        auto rebuilt = compile(*d, kernel_with(c + 2));
        EXPECT_FALSE(rebuilt->info().disk_hit);
        check_runs(*rebuilt, c + 2);
    }
}

TEST_F(CacheTest, UnoptimizedBuildsAreEntriesOfTheirOwnWithTheSameResults) {
    // CompileOptions::optimize (KILN_OPTIMIZE): the CPU's -O1 build and OpenCL's -cl-opt-disable
    // build (PoCL 3 only: PoCL 5 miscompiles without its optimizer) are cache entries of their
    // own; CUDA ignores the option and shares one entry.
    size_t separate_builds = 0;
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const ir::Kernel k = kernel_with(run_id() + 3);
        const auto optimized = compile(*d, k, {.check_bounds = false, .optimize = true});
        const auto plain = compile(*d, k, {.check_bounds = false, .optimize = false});
        check_runs(*optimized, run_id() + 3);
        check_runs(*plain, run_id() + 3);
        const bool separate = d->has_unoptimized_build();
        separate_builds += separate ? 1 : 0;
        if (d->info().backend != Backend::opencl) {
            EXPECT_EQ(separate, d->info().backend == Backend::cpu);
        }
        EXPECT_EQ(plain.get() != optimized.get(), separate);
        EXPECT_EQ(plain->info().cache_key != optimized->info().cache_key, separate);
    }
    EXPECT_EQ(entries().size(), devices().size() + separate_builds);
}

TEST(GeneratedSource, AKernelListedTwiceIsWrittenOnce) {
    // Two schedules can lower to the same kernel (a variant that falls back to another's form).
    const ir::Kernel a = kernel_with(7.0f), b = kernel_with(8.0f);
    for (Backend backend : {Backend::cpu, Backend::cuda, Backend::opencl}) {
        const std::string once = generate_source(backend, std::vector{a, b});
        EXPECT_EQ(generate_source(backend, std::vector{a, b, a}), once);
        EXPECT_NE(generate_source(backend, std::vector{a}),
                  generate_source(backend, std::vector{b}));
    }
}

// Run by SecondProcessFindsEveryKernelOnDisk in a child process.
TEST(CacheChild, CompilesFromDisk) {
    const char* expect = std::getenv("KILN_TEST_CHILD_CONSTANT");
    if (!expect) GTEST_SKIP() << "runs only as the child of SecondProcessFindsEveryKernelOnDisk";
    for (Device* d : devices()) {
        auto k = compile(*d, kernel_with(std::stof(expect)));
        EXPECT_TRUE(k->info().disk_hit) << d->info().id;
    }
}

TEST_F(CacheTest, SecondProcessFindsEveryKernelOnDisk) {
    for (Device* d : devices()) compile(*d, kernel_with(run_id()));
    const std::string constant = fmt::format("{}", run_id());
    setenv("KILN_TEST_CHILD_CONSTANT", constant.c_str(), 1);
    std::string exe = fs::read_symlink("/proc/self/exe").string();
    std::string filter = "--gtest_filter=CacheChild.CompilesFromDisk";
    char* argv[] = {exe.data(), filter.data(), nullptr};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, environ), 0);
    int status = 0;
    waitpid(pid, &status, 0);
    unsetenv("KILN_TEST_CHILD_CONSTANT");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the child found a kernel missing on disk";
}

TEST_F(CacheTest, CorruptAndTruncatedEntriesAreRebuilt) {
    for (Device* d : devices()) compile(*d, kernel_with(run_id()));
    for (int mode = 0; mode < 3; ++mode) {
        for (const auto& e : entries()) {
            if (mode == 0) {  // flip a byte in the middle of the payload
                std::fstream f(e, std::ios::in | std::ios::out | std::ios::binary);
                f.seekp(static_cast<std::streamoff>(fs::file_size(e) / 2));
                f.put('\x5a');
            } else if (mode == 1) {
                fs::resize_file(e, fs::file_size(e) / 3);
            } else {
                std::ofstream(e, std::ios::trunc) << "not a kernel";
            }
        }
        clear_memory_cache();
        for (Device* d : devices()) {
            SCOPED_TRACE(fmt::format("{} mode {}", d->info().id, mode));
            auto k = compile(*d, kernel_with(run_id()));
            EXPECT_FALSE(k->info().disk_hit);
            check_runs(*k, run_id());
        }
        clear_memory_cache();
        for (Device* d : devices())
            EXPECT_TRUE(compile(*d, kernel_with(run_id()))->info().disk_hit);
    }
}

TEST_F(CacheTest, UnwritableDirectoryWorksUncachedWithOneWarning) {
    // A regular file where the cache directory should be: no one, not even root, can write there.
    const fs::path blocker = root_.string() + "-file";
    std::ofstream(blocker) << "x";
    setenv("KILN_CACHE_DIR", (blocker / "sub").c_str(), 1);
    ::testing::internal::CaptureStderr();
    for (Device* d : devices()) {
        check_runs(*compile(*d, kernel_with(run_id() + 1)), run_id() + 1);
        check_runs(*compile(*d, kernel_with(run_id() + 2)), run_id() + 2);
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    fs::remove(blocker);
    const auto first = err.find("not writable");
    ASSERT_NE(first, std::string::npos) << err;
    EXPECT_EQ(err.find("not writable", first + 1), std::string::npos) << "warned more than once:\n"
                                                                      << err;
}

size_t count_of(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
}

// Compiles two kernels on every device and checks they run; returns what was printed to stderr.
std::string compile_two_everywhere(float a, float b) {
    ::testing::internal::CaptureStderr();
    for (Device* d : devices()) {
        auto ka = compile(*d, kernel_with(a));
        auto kb = compile(*d, kernel_with(b));
        Buffer y(*d, DType::f32, 50);
        ka->launch(2, {y});
        EXPECT_EQ(y.download<float>()[49], 49.0f * a) << d->info().id;
        kb->launch(2, {y});
        EXPECT_EQ(y.download<float>()[49], 49.0f * b) << d->info().id;
    }
    return ::testing::internal::GetCapturedStderr();
}

TEST_F(CacheTest, AnEntryCopiedOverAnotherIsRejectedAndRebuilt) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const auto a = compile(*d, kernel_with(run_id() + 3));
        const auto b = compile(*d, kernel_with(run_id() + 4));
        auto& disk = cache::process_kernel_cache();
        const auto path_a = disk.entry_path(d->info().id, a->info().cache_key);
        const auto path_b = disk.entry_path(d->info().id, b->info().cache_key);
        ASSERT_TRUE(fs::exists(path_a) && fs::exists(path_b));
        fs::copy_file(path_a, path_b, fs::copy_options::overwrite_existing);
        clear_memory_cache();
        ::testing::internal::CaptureStderr();
        const auto rebuilt = compile(*d, kernel_with(run_id() + 4));
        const std::string err = ::testing::internal::GetCapturedStderr();
        EXPECT_FALSE(rebuilt->info().disk_hit);
        check_runs(*rebuilt, run_id() + 4);
        EXPECT_EQ(count_of(err, "written for another kernel"), 1u) << err;
        clear_memory_cache();
        EXPECT_TRUE(compile(*d, kernel_with(run_id() + 4))->info().disk_hit);
        EXPECT_TRUE(compile(*d, kernel_with(run_id() + 3))->info().disk_hit);
    }
}

TEST_F(CacheTest, DirectoriesAreCreatedPrivate) {
    for (Device* d : devices()) compile(*d, kernel_with(run_id()));
    std::vector<fs::path> dirs = {root_, root_ / "kernels"};
    for (Device* d : devices())
        dirs.push_back(root_ / "kernels" / cache::safe_component(d->info().id));
    for (const auto& dir : dirs) {
        struct stat st {};
        ASSERT_EQ(::stat(dir.c_str(), &st), 0) << dir;
        EXPECT_EQ(st.st_mode & 0777, 0700u) << dir;
    }
    for (const auto& e : entries())
        EXPECT_EQ(fs::status(e).permissions() & fs::perms::all,
                  fs::perms::owner_read | fs::perms::owner_write);
}

// A cache directory that is not the user's own is never read or written: each kernel compiles
// and runs, nothing appears under it, and one warning names it.
void expect_bypassed(const fs::path& root, const fs::path& bad_dir, float a) {
    std::vector<fs::path> listed_before;
    for (const auto& e : fs::recursive_directory_iterator(root)) listed_before.push_back(e.path());
    clear_memory_cache();
    std::string err = compile_two_everywhere(a, a + 1);
    clear_memory_cache();
    err += compile_two_everywhere(a, a + 1);  // nothing was kept: compiled again, still silent
    std::vector<fs::path> listed_after;
    for (const auto& e : fs::recursive_directory_iterator(root)) listed_after.push_back(e.path());
    EXPECT_EQ(listed_after, listed_before);
    EXPECT_EQ(count_of(err, "kiln: warning:"), 1u) << err;
    EXPECT_NE(err.find(bad_dir.string()), std::string::npos) << err;
}

TEST_F(CacheTest, ARootOwnedBySomeoneElseIsBypassedWithOneWarning) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to nobody";
    fs::create_directory(root_);
    ASSERT_EQ(::chmod(root_.c_str(), 0700), 0);
    ASSERT_EQ(::chown(root_.c_str(), 65534, 65534), 0);  // nobody
    expect_bypassed(root_, root_, run_id() + 10);
}

TEST_F(CacheTest, ARootWritableByOthersIsBypassedWithOneWarning) {
    fs::create_directory(root_);
    ASSERT_EQ(::chmod(root_.c_str(), 0777), 0);
    expect_bypassed(root_, root_, run_id() + 20);
}

// The CPU device's entry directory spoiled by `spoil`: its entries are not loaded, new ones are
// not written, and one warning says `why`.
void expect_entry_dir_bypassed(const fs::path& root,
                               const std::function<void(const fs::path&)>& spoil,
                               const std::string& why, float a) {
    for (Device* d : devices()) compile(*d, kernel_with(a));
    const fs::path dir = root / "kernels" / cache::safe_component(cpu_device().info().id);
    spoil(dir);
    clear_memory_cache();
    ::testing::internal::CaptureStderr();
    const auto k = compile(cpu_device(), kernel_with(a));
    const auto again = compile(cpu_device(), kernel_with(a + 30));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(k->info().disk_hit);  // its entry there is not loaded
    CacheTest::check_runs(*k, a);
    CacheTest::check_runs(*again, a + 30);
    EXPECT_EQ(count_of(err, "kiln: warning:"), 1u) << err;
    EXPECT_NE(err.find(why), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(
        cache::process_kernel_cache().entry_path(cpu_device().info().id, again->info().cache_key)));
}

TEST_F(CacheTest, AnEntryDirectoryWritableByItsGroupIsBypassedWithOneWarning) {
    expect_entry_dir_bypassed(
        root_, [](const fs::path& dir) { ASSERT_EQ(::chmod(dir.c_str(), 0770), 0); },
        "writable by its group", run_id());
}

TEST_F(CacheTest, AnEntryDirectoryOwnedBySomeoneElseIsBypassedWithOneWarning) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to nobody";
    expect_entry_dir_bypassed(
        root_, [](const fs::path& dir) { ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0); },
        "is owned by uid 65534", run_id());
}

// The pid of a process that has exited.
pid_t dead_pid() {
    char arg0[] = "/bin/true";
    char* argv[] = {arg0, nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, arg0, nullptr, nullptr, argv, environ), 0);
    int status = 0;
    waitpid(pid, &status, 0);
    return pid;
}

void age(const fs::path& path, std::chrono::seconds by) {
    fs::last_write_time(path, fs::file_time_type::clock::now() - by);
}

TEST_F(CacheTest, StaleTemporariesOfKilledWritersAreRemoved) {
    const std::string id = cpu_device().info().id;
    const fs::path dir = root_ / "kernels" / cache::safe_component(id);
    fs::create_directories(dir);
    fs::permissions(root_, fs::perms::owner_all);
    fs::permissions(root_ / "kernels", fs::perms::owner_all);
    fs::permissions(dir, fs::perms::owner_all);
    const pid_t gone = dead_pid(), alive = getpid();
    const fs::path dead_writer = dir / fmt::format(".0123456789abcdef.bin.{}.1f2e.tmp", gone);
    const fs::path old_writer = dir / fmt::format(".0123456789abcdef.bin.{}.3c4d.tmp", alive);
    const fs::path live_writer = dir / fmt::format(".0123456789abcdef.bin.{}.5e6f.tmp", alive);
    const fs::path just_dead = dir / fmt::format(".fedcba9876543210.bin.{}.7a8b.tmp", gone);
    const fs::path not_ours = dir / ".notes.tmp";
    for (const auto& p : {dead_writer, old_writer, live_writer, just_dead, not_ours})
        std::ofstream(p) << "partial";
    age(dead_writer, std::chrono::minutes(2));
    age(old_writer, std::chrono::hours(2));
    age(not_ours, std::chrono::hours(2));
    clear_memory_cache();
    check_runs(*compile(cpu_device(), kernel_with(run_id())), run_id());
    EXPECT_FALSE(fs::exists(dead_writer));
    EXPECT_FALSE(fs::exists(old_writer));
    EXPECT_TRUE(fs::exists(live_writer));  // its writer may still rename it
    EXPECT_TRUE(fs::exists(just_dead));    // too recent to judge across pid namespaces
    EXPECT_TRUE(fs::exists(not_ours));
}

TEST(TempDirs, StaleOnesOfKilledProcessesAreRemovedByTheFirstOfAPrefix) {
    const fs::path tmp = fs::temp_directory_path() / fmt::format("kiln-tempdir-test-{}", getpid());
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    setenv("TMPDIR", tmp.c_str(), 1);
    const pid_t gone = dead_pid();
    const auto now = fs::file_time_type::clock::now();
    auto make = [&](const std::string& name, std::chrono::seconds age) {
        fs::create_directories(tmp / name / "sub");
        std::ofstream(tmp / name / "sub" / "kernel.cl") << "kernel";
        fs::last_write_time(tmp / name, now - age);
        return tmp / name;
    };
    const auto killed = make(fmt::format("kiln-probe-{}-a1b2c3", gone), std::chrono::minutes(2));
    const auto just_killed =
        make(fmt::format("kiln-probe-{}-d4e5f6", gone), std::chrono::seconds(0));
    const auto running =
        make(fmt::format("kiln-probe-{}-g7h8i9", getpid()), std::chrono::minutes(5));
    const auto old_naming = make("kiln-probe-j0k1l2", std::chrono::hours(2));
    const auto recent_old_naming = make("kiln-probe-m3n4o5", std::chrono::minutes(5));
    const auto other = make("kiln-probe-notes", std::chrono::hours(2));
    const auto other_prefix =
        make(fmt::format("kiln-other-{}-p6q7r8", gone), std::chrono::hours(2));
    fs::path made;
    {
        cache::TempDir dir("kiln-probe-", "test");
        made = dir.path();
        EXPECT_EQ(made.parent_path(), tmp);
        EXPECT_TRUE(made.filename().string().starts_with(fmt::format("kiln-probe-{}-", getpid())));
        EXPECT_EQ(fs::status(made).permissions() & fs::perms::all, fs::perms::owner_all);
    }
    EXPECT_FALSE(fs::exists(made));
    EXPECT_FALSE(fs::exists(killed));
    EXPECT_FALSE(fs::exists(old_naming));
    for (const auto& kept : {just_killed, running, recent_old_naming, other, other_prefix})
        EXPECT_TRUE(fs::exists(kept)) << kept;
    if (old)
        setenv("TMPDIR", saved.c_str(), 1);
    else
        unsetenv("TMPDIR");
    fs::remove_all(tmp);
}

// A note sits beside the entry of the same key without disturbing it, and is read only when it
// is the user's own file, as entries are.
TEST_F(CacheTest, NotesAreKeptBesideEntriesAndTrustedOnlyWhenTheUsersOwn) {
    auto& disk = cache::process_kernel_cache();
    const std::string dev = "note-test-device", key = "0123456789abcdef";
    const std::vector<uint8_t> binary = {7, 8, 9};
    EXPECT_FALSE(disk.load_note(dev, key).has_value());
    disk.store(dev, key, binary);
    disk.store_note(dev, key, "crashed with signal 6 (SIGABRT): assertion");
    EXPECT_EQ(disk.load_note(dev, key), "crashed with signal 6 (SIGABRT): assertion");
    EXPECT_EQ(disk.load(dev, key), binary);
    const fs::path note = disk.note_path(dev, key);
    EXPECT_EQ(note.parent_path(), disk.entry_path(dev, key).parent_path());
    EXPECT_EQ(note.filename().string(), key + cache::kNoteSuffix);
    EXPECT_TRUE(cache::is_note_name(note.filename().string()));
    EXPECT_FALSE(cache::is_entry_name(note.filename().string()));
    EXPECT_EQ(fs::status(note).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);

    ::testing::internal::CaptureStderr();
    ASSERT_EQ(::chmod(note.c_str(), 0620), 0);  // writable by its group: anyone there wrote it
    EXPECT_FALSE(disk.load_note(dev, key).has_value());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "kiln: warning:"), 1u) << err;
    EXPECT_NE(err.find(note.string()), std::string::npos) << err;
    disk.store_note(dev, key, "crashed again");  // replaced by the user's own
    EXPECT_EQ(disk.load_note(dev, key), "crashed again");
    if (::geteuid() == 0) {
        ASSERT_EQ(::chown(note.c_str(), 65534, 65534), 0);  // nobody's
        EXPECT_FALSE(disk.load_note(dev, key).has_value());
    }
    fs::remove(note);
    const fs::path elsewhere = root_ / "elsewhere.txt";
    std::ofstream(elsewhere) << "crashed";
    fs::create_symlink(elsewhere, note);  // a link is not followed
    EXPECT_FALSE(disk.load_note(dev, key).has_value());
    EXPECT_EQ(disk.load(dev, key), binary);
}

TEST_F(CacheTest, ClearRemovesOnlyWhatKilnWrote) {
    for (Device* d : devices()) compile(*d, kernel_with(run_id()));
    const std::string id = cache::safe_component(cpu_device().info().id);
    const fs::path kernels = root_ / "kernels";
    fs::create_directories(kernels / "linux-6.1" / "drivers");
    std::ofstream(kernels / "linux-6.1" / "Makefile") << "obj-y += drivers/";
    std::ofstream(kernels / id / "notes.bin") << "mine";
    std::ofstream(kernels / id / "0123456789ABCDEF.bin") << "upper case: not a kiln key";
    std::ofstream(kernels / id / "0123456789abcdef.crash") << "crashed with signal 6";
    fs::create_directories(kernels / id / "failed");
    std::ofstream(kernels / id / "failed" / "0123456789abcdef.cpp") << "int main;";
    std::ofstream(kernels / id / "failed" / "keep.cpp") << "int keep;";
    std::ofstream(kernels / "README") << "hello";
    std::vector<fs::path> left_alone;
    const uint64_t removed = cache::process_kernel_cache().clear("", left_alone);
    // An entry and its kernel's index note per device, the verdict, the source.
    EXPECT_EQ(removed, 2 * devices().size() + 2);
    std::vector<fs::path> expected = {kernels / "README",
                                      kernels / "linux-6.1" / "Makefile",
                                      kernels / "linux-6.1" / "drivers",
                                      kernels / id / "0123456789ABCDEF.bin",
                                      kernels / id / "failed" / "keep.cpp",
                                      kernels / id / "notes.bin"};
    std::sort(expected.begin(), expected.end());
    std::sort(left_alone.begin(), left_alone.end());
    EXPECT_EQ(left_alone, expected);
    EXPECT_EQ(entries().size(), 2u);  // notes.bin and the upper-case one
    EXPECT_TRUE(fs::exists(kernels / "linux-6.1" / "drivers"));
    EXPECT_TRUE(fs::exists(kernels / "linux-6.1" / "Makefile"));
    EXPECT_FALSE(fs::exists(kernels / id / "failed" / "0123456789abcdef.cpp"));
    for (Device* d : devices()) {
        if (d != &cpu_device()) {
            EXPECT_FALSE(fs::exists(kernels / cache::safe_component(d->info().id)))
                << "an emptied device directory is removed";
        }
    }
}

// A well-formed entry (its own key, a valid checksum) whose module lacks the kernel's entry point:
// rebuilt with a warning naming it, like any other bad entry, and fine on later runs.
TEST_F(CacheTest, AnEntryWithoutTheKernelsSymbolIsRebuiltWithAWarning) {
    Device& d = cpu_device();
    const auto mine = compile(d, kernel_with(run_id()));
    const auto other = compile(d, kernel_with(run_id() + 1));
    auto& disk = cache::process_kernel_cache();
    const auto other_binary = disk.load(d.info().id, other->info().cache_key);
    ASSERT_TRUE(other_binary.has_value());
    disk.store(d.info().id, mine->info().cache_key, *other_binary);
    clear_memory_cache();
    ::testing::internal::CaptureStderr();
    const auto rebuilt = compile(d, kernel_with(run_id()));
    check_runs(*rebuilt, run_id());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(rebuilt->info().disk_hit);
    EXPECT_THAT(
        err, ::testing::HasSubstr(disk.entry_path(d.info().id, mine->info().cache_key).string()));
    EXPECT_THAT(err, ::testing::HasSubstr("rebuilding it"));
    clear_memory_cache();
    const auto again = compile(d, kernel_with(run_id()));
    EXPECT_TRUE(again->info().disk_hit);
    check_runs(*again, run_id());
}

// A user's file with an entry's name but not an entry's format is left where it is.
TEST_F(CacheTest, ClearChecksAnEntrysContentNotJustItsName) {
    Device& d = cpu_device();
    compile(d, kernel_with(run_id()));
    const fs::path dir = root_ / "kernels" / cache::safe_component(d.info().id);
    const fs::path user = dir / "aaaaaaaaaaaaaaaa.bin";
    std::ofstream(user) << "my own binary data";
    std::vector<fs::path> left_alone;
    EXPECT_EQ(cache::process_kernel_cache().clear(d.info().id, left_alone), 2u);  // entry, note
    EXPECT_EQ(left_alone, std::vector<fs::path>{user});
    ASSERT_TRUE(fs::exists(user));
    EXPECT_EQ(fs::file_size(user), std::string("my own binary data").size());
}

TEST(CachePaths, XdgAndOverride) {
    setenv("KILN_CACHE_DIR", "/tmp/kiln-x", 1);
    EXPECT_EQ(cache::cache_root(), fs::path("/tmp/kiln-x"));
    unsetenv("KILN_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    EXPECT_EQ(cache::cache_root(), fs::path("/tmp/xdg/kiln"));
    unsetenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const std::string saved_home = home ? home : "";
    setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(cache::cache_root(), fs::path("/home/someone/.cache/kiln"));
    EXPECT_EQ(cache::safe_component("a b/c:d"), "a_b_c_d");
    // Nothing set: no disk cache at all (no shared directory in /tmp), after one warning.
    unsetenv("HOME");
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(cache::cache_root(), fs::path());
    EXPECT_EQ(cache::cache_root(), fs::path());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "kiln: warning: no cache directory"), 1u) << err;
    if (home) setenv("HOME", saved_home.c_str(), 1);
}

TEST(CachePaths, WithoutARootNothingIsWritten) {
    cache::KernelCache none{fs::path()};
    const std::vector<uint8_t> bytes = {1, 2, 3};
    none.store("dev", "0123456789abcdef", bytes);
    EXPECT_FALSE(none.load("dev", "0123456789abcdef").has_value());
    none.store_note("dev", "0123456789abcdef", "crashed");
    EXPECT_FALSE(none.load_note("dev", "0123456789abcdef").has_value());
    EXPECT_EQ(none.entry_path("dev", "0123456789abcdef"), fs::path());
    EXPECT_FALSE(fs::exists("dev"));
    EXPECT_FALSE(fs::exists(fs::path("kernels")));
}

}  // namespace
