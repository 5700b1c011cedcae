// OpenCL builds in a child process (runtime/opencl/isolated_build.hpp): a compiler that crashes
// becomes a kiln::Error naming the kernel and the signal while this process lives on, the verdict
// is remembered so the crash is not repeated, and a build in the helper gives a working kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "runtime/opencl/isolated_build.hpp"
#include "support/errors.hpp"

using namespace kiln;
using ::testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

Device* opencl_device() {
    for (Device* d : devices())
        if (d->info().backend == Backend::opencl) return d;
    return nullptr;
}

// y = x + c, with a name no other test (or earlier run in this cache) compiles.
ir::Kernel fresh_kernel(float c) {
    static std::atomic<int> count{0};
    KernelBuilder k(fmt::format("isolated_{}_{}", ::getpid(), count++), 64);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = x[i] + c; });
    return k.finish();
}

// Sets environment variables for one test and puts them back after it.
class IsolatedBuild : public ::testing::Test {
  protected:
    void SetUp() override {
        device_ = opencl_device();
        if (device_ == nullptr) GTEST_SKIP() << "no OpenCL device";
        dir_ = fs::temp_directory_path() / fmt::format("kiln-isolation-test-{}", ::getpid());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        set("KILN_CACHE_DIR", (dir_ / "cache").string());
        set("KILN_OPENCL_ISOLATE", "1");
    }
    void TearDown() override {
        for (const auto& [name, value] : saved_)
            value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    void set(const std::string& name, const std::string& value) {
        const char* old = std::getenv(name.c_str());
        saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    // A stand-in helper that prints an assertion, counts its runs and aborts like PoCL 5 did.
    fs::path aborting_helper() {
        const fs::path script = dir_ / "aborting-probe.sh";
        std::ofstream(script) << "#!/bin/sh\nulimit -c 0\necho run >> '" << (dir_ / "runs").string()
                              << "'\necho \"Kernel.cc:129: Assertion 'region_entry_barrier != "
                                 "NULL' failed.\" >&2\nkill -s ABRT $$\n";
        ::chmod(script.c_str(), 0755);
        return script;
    }
    int helper_runs() const {
        std::ifstream in(dir_ / "runs");
        int n = 0;
        for (std::string line; std::getline(in, line);) ++n;
        return n;
    }

    Device* device_ = nullptr;
    fs::path dir_;
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(IsolatedBuild, ACrashingCompilerIsAnErrorNamingTheKernelAndTheSignal) {
    set("KILN_OPENCL_PROBE", aborting_helper().string());
    const ir::Kernel kernel = fresh_kernel(1.0f);
    const std::string first = test::error_of([&] { compile(*device_, kernel); });
    EXPECT_THAT(first, HasSubstr(kernel.name));
    EXPECT_THAT(first, HasSubstr("crashed with signal 6 (SIGABRT)"));
    EXPECT_THAT(first, HasSubstr("region_entry_barrier"));  // the compiler's own words
    EXPECT_EQ(helper_runs(), 1);
    // The verdict is kept: the next attempt fails at once, without running the compiler again.
    const std::string second = test::error_of([&] { compile(*device_, kernel); });
    EXPECT_THAT(second, HasSubstr(kernel.name));
    EXPECT_THAT(second, HasSubstr("crashed on this source in an earlier run"));
    EXPECT_THAT(second, HasSubstr("SIGABRT"));
    EXPECT_EQ(helper_runs(), 1);
    // Other sources are unaffected: the real helper builds them.
    ::unsetenv("KILN_OPENCL_PROBE");
    EXPECT_NO_THROW(compile(*device_, fresh_kernel(2.0f)));
}

// A verdict file that anyone but the user could have written is not believed: the compiler runs.
TEST_F(IsolatedBuild, AVerdictThatIsNotTheUsersOwnIsIgnored) {
    set("KILN_OPENCL_PROBE", aborting_helper().string());
    const ir::Kernel kernel = fresh_kernel(4.0f);
    EXPECT_THAT(test::error_of([&] { compile(*device_, kernel); }), HasSubstr("SIGABRT"));
    std::vector<fs::path> verdicts;
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "cache"))
        if (e.path().extension() == ".crash") verdicts.push_back(e.path());
    ASSERT_EQ(verdicts.size(), 1u);
    ASSERT_EQ(::chmod(verdicts[0].c_str(), 0666), 0);
    const std::string again = test::error_of([&] { compile(*device_, kernel); });
    EXPECT_THAT(again, HasSubstr("crashed with signal 6 (SIGABRT)"));
    EXPECT_THAT(again, ::testing::Not(HasSubstr("earlier run")));
    EXPECT_EQ(helper_runs(), 2);
}

TEST_F(IsolatedBuild, TheHelpersBinaryRunsCorrectly) {
    ASSERT_FALSE(runtime::opencl::probe_executable().empty()) << "kiln-opencl-probe not found";
    auto kernel = compile(*device_, fresh_kernel(0.5f));
    EXPECT_FALSE(kernel->info().disk_hit);
    Buffer x(*device_, DType::f32, 100), y(*device_, DType::f32, 100);
    std::vector<float> in(100);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    x.upload(in);
    kernel->launch(2, {x, y});
    const std::vector<float> out = y.download<float>();
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], in[i] + 0.5f) << i;
}

TEST_F(IsolatedBuild, AHelperThatCannotRunIsAnErrorNamingIt) {
    set("KILN_OPENCL_PROBE", (dir_ / "no-such-probe").string());
    EXPECT_THAT(test::error_of([&] { compile(*device_, fresh_kernel(3.0f)); }),
                HasSubstr("no-such-probe"));
}

}  // namespace
