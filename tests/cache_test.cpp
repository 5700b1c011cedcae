// The compiled-kernel caches: memory hits, disk hits in a second process, corrupt and truncated
// entries rebuilt, an unwritable cache directory working uncached with one warning.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "cache/paths.hpp"
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
        root_ = fs::temp_directory_path() / fmt::format("kiln-cache-test-{}", getpid());
        fs::remove_all(root_);
        setenv("KILN_CACHE_DIR", root_.c_str(), 1);
        clear_memory_cache();
    }
    void TearDown() override {
        unsetenv("KILN_CACHE_DIR");
        clear_memory_cache();
        fs::remove_all(root_);
    }
    static void check_runs(const CompiledKernel& k, float constant) {
        Buffer y(k.device(), DType::f32, 50);
        k.launch(2, {y});
        EXPECT_EQ(y.download<float>()[49], 49.0f * constant);
    }
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

TEST(CachePaths, XdgAndOverride) {
    setenv("KILN_CACHE_DIR", "/tmp/kiln-x", 1);
    EXPECT_EQ(cache::cache_root(), fs::path("/tmp/kiln-x"));
    unsetenv("KILN_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    EXPECT_EQ(cache::cache_root(), fs::path("/tmp/xdg/kiln"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(cache::cache_root(), fs::path("/home/someone/.cache/kiln"));
    EXPECT_EQ(cache::safe_component("a b/c:d"), "a_b_c_d");
}

}  // namespace
