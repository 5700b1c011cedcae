// The real kiln binary, as a hostile or careless user runs it: shapes that overflow, outgrow
// memory or int64 are usage errors; a TSV path that is a symbolic link, a directory, a FIFO or
// /dev/zero is one warning and tuning in memory; `cache clear` removes only what kiln wrote; no
// HOME means no disk cache; compile directories killed processes left behind are removed. The
// kernels the tunes need compile once (warm_kernel_cache); each test copies them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/device.hpp"
#include "kiln/program.hpp"
#include "ops/attention/attention.hpp"
#include "runtime/cpu/process.hpp"
#include "tensor/program_file.hpp"

using namespace kiln;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

namespace {

size_t count_of(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Sets environment variables (nullopt: unset) for its lifetime, restoring them after.
class ScopedEnv {
  public:
    explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& values) {
        for (const auto& [name, value] : values) {
            const char* old = std::getenv(name.c_str());
            saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
            if (value)
                setenv(name.c_str(), value->c_str(), 1);
            else
                unsetenv(name.c_str());
        }
    }
    ~ScopedEnv() {
        for (const auto& [name, value] : saved_) {
            if (value)
                setenv(name.c_str(), value->c_str(), 1);
            else
                unsetenv(name.c_str());
        }
    }

  private:
    std::map<std::string, std::optional<std::string>> saved_;
};

struct CliRun {
    int exit_status;
    std::string output;  // stdout and stderr
};

// Runs `argv`; a run that does not finish within the timeout fails the test.
CliRun run_cli(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    const auto r = runtime::cpu::run_process(argv, timeout);
    EXPECT_FALSE(r.timed_out) << runtime::cpu::command_line(argv) << " hung:\n" << r.output;
    EXPECT_EQ(r.signal, 0) << runtime::cpu::command_line(argv) << "\n" << r.output;
    return {r.exit_status, r.output};
}

// The kiln binary: $KILN_TEST_CLI where set (a bundle's tests on another machine), else the
// build's.
std::string cli_path() {
    const char* path = std::getenv("KILN_TEST_CLI");
    return path && *path ? path : KILN_CLI_PATH;
}

// Runs kiln with `args`.
CliRun kiln_cli(const std::vector<std::string>& args, std::chrono::seconds timeout) {
    std::vector<std::string> argv = {cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_cli(argv, timeout);
}

// Runs kiln with `args` and its standard output sent to `path`; only its stderr comes back.
CliRun kiln_cli_stdout_to(const std::string& path, const std::vector<std::string>& args,
                          std::chrono::seconds timeout) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "out=$1; shift; exec \"$@\" >\"$out\"",
                                     "sh",      path, cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_cli(argv, timeout);
}

class CliTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               fmt::format("kiln-cli-test-{}-{}", getpid(),
                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "tmp");
        env_.emplace(std::map<std::string, std::optional<std::string>>{
            {"KILN_CACHE_DIR", (dir_ / "cache").string()}, {"TMPDIR", (dir_ / "tmp").string()}});
    }
    void TearDown() override {
        env_.reset();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    static void SetUpTestSuite() {
        warm_dir() = fs::temp_directory_path() / fmt::format("kiln-cli-test-{}-warm", getpid());
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        fs::remove_all(warm_dir(), ec);
    }
    fs::path tsv() const { return dir_ / "cache" / "autotune" / (cpu_device().info().id + ".tsv"); }
    // A small tune on the CPU.
    static std::vector<std::string> small_tune() {
        return {"tune", "rms_norm", "--rows", "3", "--n", "40", "--device", "cpu"};
    }
    // A run that compiles little: two small kernels.
    static std::vector<std::string> small_demo() {
        return {"demo", "--device", "cpu", "--rows", "8", "--n", "40", "--repeats", "1"};
    }
    static fs::path& warm_dir() {  // a cache shared by the tests, outside their TMPDIR
        static fs::path dir;
        return dir;
    }
    // Gives this test's cache the kernels small_tune() needs, compiled once for all tests.
    void warm_kernel_cache() {
        static const bool compiled = [] {
            ScopedEnv env({{"KILN_CACHE_DIR", (warm_dir() / "cache").string()}});
            const CliRun r = kiln_cli(small_tune(), std::chrono::seconds(300));
            EXPECT_EQ(r.exit_status, 0) << r.output;
            return r.exit_status == 0;
        }();
        ASSERT_TRUE(compiled);
        fs::create_directories(dir_ / "cache");
        fs::permissions(dir_ / "cache", fs::perms::owner_all);
        fs::copy(warm_dir() / "cache" / "kernels", dir_ / "cache" / "kernels",
                 fs::copy_options::recursive);
    }

    fs::path dir_;
    std::optional<ScopedEnv> env_;
};

TEST_F(CliTest, RowsTimesNBeyondInt64IsAUsageErrorAndRecordsNothing) {
    const CliRun r = kiln_cli(
        {"tune", "rms_norm", "--rows", "4611686018427387904", "--n", "4", "--device", "cpu"},
        std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("kiln: error: rms_norm: rows = 4611686018427387904 x n = 4 "
                                    "overflows int64 in elements (at most 9223372036854775807)"));
    EXPECT_FALSE(fs::exists(dir_ / "cache")) << "nothing may be recorded";
}

TEST_F(CliTest, ShapesTooBigForTheKernelOrMemoryAreUsageErrors) {
    const std::vector<std::vector<std::string>> cases = {
        {"tune", "rms_norm", "--rows", "1000000", "--n", "1000000"},
        {"tune", "rms_norm", "--rows", "1", "--n", "4000000000"},
        {"tune", "matvec_q8", "--rows", "100000000", "--k", "4096"},
        {"tune", "matvec_q8", "--rows", "1", "--k", "4611686018427387904"},
    };
    for (auto args : cases) {
        args.insert(args.end(), {"--device", "cpu"});
        const CliRun r = kiln_cli(args, std::chrono::seconds(60));
        EXPECT_EQ(r.exit_status, 2) << r.output;
        EXPECT_THAT(r.output, HasSubstr("kiln: error:"));
        EXPECT_THAT(r.output, ::testing::AnyOf(HasSubstr("at most"), HasSubstr("expected 1 to")));
        EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
    }
    EXPECT_FALSE(fs::exists(dir_ / "cache"));
}

TEST_F(CliTest, ValuesBeyondInt64AreNotClamped) {
    for (const char* option : {"--rows", "--n"}) {
        std::vector<std::string> args = {"tune", "rms_norm", "--rows", "2", "--n", "8"};
        args[option == std::string("--rows") ? 3 : 5] = "99999999999999999999";
        const CliRun r = kiln_cli(args, std::chrono::seconds(60));
        EXPECT_EQ(r.exit_status, 2) << r.output;
        EXPECT_THAT(r.output, HasSubstr(fmt::format("{}: '99999999999999999999' given; expected "
                                                    "a decimal whole number from 1 to "
                                                    "9223372036854775807",
                                                    option)));
    }
}

// Every whole-number option of every subcommand takes decimal digits within its range and
// nothing else: 0 where a size is expected, hex, a sign, or a value beyond the type is a usage
// error naming the option, the value and what is expected, before anything runs. (The other
// sizes are small, so a run that wrongly goes ahead ends quickly.)
TEST_F(CliTest, NumericOptionsAreDecimalWithinTheirRange) {
    const std::string size_range = "expected a decimal whole number from 1 to 9223372036854775807";
    const std::tuple<std::vector<std::string>, std::string, std::string> cases[] = {
        {{"profile", "softmax", "--rows", "0", "--n", "16"}, "--rows: '0'", size_range},
        {{"profile", "softmax", "--rows", "2", "--n", "0"}, "--n: '0'", size_range},
        {{"profile", "softmax", "--rows", "0x10", "--n", "16"}, "--rows: '0x10'", size_range},
        {{"profile", "add_square", "--n", "16", "--hits", "+3"},
         "--hits: '+3'",
         "from 1 to 100000"},
        {{"conformance", "--area", "smoke", "--filter", "add_square", "--runs", "1", "--seed",
          "-1"},
         "--seed: '-1'",
         "expected a decimal whole number from 0 to 18446744073709551615"},
        {{"conformance", "--area", "smoke", "--filter", "add_square", "--runs", "1", "--seed",
          "99999999999999999999999"},
         "--seed: '99999999999999999999999'",
         "from 0 to 18446744073709551615"},
        {{"conformance", "--area", "smoke", "--filter", "add_square", "--runs", "0x1"},
         "--runs: '0x1'",
         "from 1 to 1000"},
        {{"bench", "--quick", "--cases", "copy", "--iters", "1e3"},
         "--iters: '1e3'",
         "from 3 to 10000"},
        {{"demo", "--rows", "0", "--n", "4", "--repeats", "1"}, "--rows: '0'", size_range},
        {{"demo", "--rows", "2", "--n", "4", "--repeats", "0x2"},
         "--repeats: '0x2'",
         "from 1 to 1000"},
        {{"tune", "matmul", "--m", "0", "--n", "8", "--k", "8"}, "--m: '0'", size_range},
        {{"tune", "conv1d", "--channels", "2", "--length", "8", "--out-channels", "2", "--kernel",
          "3", "--padding", "-1"},
         "--padding: '-1'",
         "expected a decimal whole number from 0 to 9223372036854775807"},
    };
    for (auto [args, given, expected] : cases) {
        args.insert(args.end(), {"--device", "cpu"});
        SCOPED_TRACE(fmt::format("{}", fmt::join(args, " ")));
        const CliRun r = kiln_cli(args, std::chrono::seconds(120));
        EXPECT_EQ(r.exit_status, 2) << r.output;
        EXPECT_THAT(r.output, HasSubstr(given)) << r.output;
        EXPECT_THAT(r.output, HasSubstr(expected)) << r.output;
    }
    EXPECT_FALSE(fs::exists(dir_ / "cache")) << "nothing may run";
}

// A write kiln cannot complete (a full disk: /dev/full) is an error naming where it wrote, with
// a non-zero exit: --trace, --json and --report files and standard output.
TEST_F(CliTest, WriteFailuresNameWhereAndExitNonZero) {
    ASSERT_TRUE(fs::exists("/dev/full"));
    const std::vector<std::string> profile = {"profile", "add_square", "--n",      "16",
                                              "--hits",  "1",          "--device", "cpu"};
    const std::vector<std::string> conformance = {"conformance", "--device", "cpu",
                                                  "--area",      "smoke",    "--filter",
                                                  "add_square",  "--runs",   "1"};
    const std::vector<std::string> bench = {"bench",   "--device", "cpu",
                                            "--quick", "--cases",  "copy"};
    auto with = [](std::vector<std::string> args, std::initializer_list<std::string> more) {
        args.insert(args.end(), more);
        return args;
    };
    for (const auto& args :
         {with(profile, {"--trace", "/dev/full"}), with(conformance, {"--json", "/dev/full"}),
          with(bench, {"--json", "/dev/full"}), with(bench, {"--report", "/dev/full"})}) {
        SCOPED_TRACE(fmt::format("{}", fmt::join(args, " ")));
        const CliRun r = kiln_cli(args, std::chrono::seconds(300));
        EXPECT_EQ(r.exit_status, 2) << r.output;
        EXPECT_THAT(r.output, HasSubstr("kiln: error: cannot write /dev/full")) << r.output;
    }
    for (const auto& args : {with(profile, {"--json"}), profile, conformance, {"info"}}) {
        SCOPED_TRACE(fmt::format("{} >/dev/full", fmt::join(args, " ")));
        const CliRun r = kiln_cli_stdout_to("/dev/full", args, std::chrono::seconds(300));
        EXPECT_EQ(r.exit_status, 2) << r.output;
        EXPECT_THAT(r.output, HasSubstr("kiln: error: cannot write standard output")) << r.output;
    }
}

// --version prints the project's version; a subcommand kiln does not have is named as such,
// with the ones it has.
TEST_F(CliTest, VersionAndUnknownSubcommands) {
    CliRun r = kiln_cli({"--version"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 0) << r.output;
    EXPECT_EQ(r.output, "kiln " KILN_VERSION "\n");
    r = kiln_cli({"bogus"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("kiln: unknown subcommand 'bogus'; expected one of info, demo, "
                                    "tune, cache, profile, conformance, bench"));
    r = kiln_cli({"tune", "bogus", "--rows", "3"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("kiln tune: unknown subcommand 'bogus'; expected one of "
                                    "rms_norm, matvec_q8, matmul, conv1d, attention"));
    r = kiln_cli({}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("kiln: a subcommand is required; expected one of info, demo"));
    for (const auto& help : std::vector<std::vector<std::string>>{{"--help"}, {"tune", "--help"}}) {
        r = kiln_cli(help, std::chrono::seconds(60));
        EXPECT_EQ(r.exit_status, 0) << r.output;
        EXPECT_THAT(r.output, HasSubstr("Usage: kiln")) << r.output;
    }
}

// KILN_TIME_RANGE times the launches of every resolve in its range, the first (planning) run's
// and each replay's, and prints each once with its number: every launch of the profile's
// resolves (KILN_RESOLVE_PROFILE counts them), misses and hits, numbered 0, 1, 2, ...
TEST_F(CliTest, TimeRangeTimesTheFirstRunAndEveryReplay) {
    ScopedEnv range(std::map<std::string, std::optional<std::string>>{
        {"KILN_TIME_RANGE", "0"}, {"KILN_RESOLVE_PROFILE", "1"}});
    const CliRun r =
        kiln_cli({"profile", "add_square", "--n", "16", "--hits", "3", "--device", "cpu"},
                 std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    const std::regex resolve(R"(kiln: resolve (hit|miss) .*\((\d+) launches\))");
    size_t launches = 0, hits = 0;
    for (std::sregex_iterator m(r.output.begin(), r.output.end(), resolve), end; m != end; ++m) {
        launches += std::stoul((*m)[2]);
        hits += (*m)[1] == "hit";
    }
    // The three replay hits, and the trace of the case's compiled form (kiln::compile), which
    // runs the same graph as a resolve answered by the replay cache.
    EXPECT_EQ(hits, 4u) << r.output;
    EXPECT_EQ(count_of(r.output, "kiln: launch "), launches) << r.output;
    for (size_t i = 0; i < launches; ++i)
        EXPECT_EQ(count_of(r.output, fmt::format("kiln: launch {} ", i)), 1u) << i << r.output;
}

TEST_F(CliTest, ATsvThatIsNotARegularFileIsOneWarningAndTuningInMemory) {
    warm_kernel_cache();
    CliRun r = kiln_cli(small_tune(), std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    const std::string recorded = read_text(tsv());
    ASSERT_THAT(recorded, HasSubstr("rms_norm\t"));
    const fs::path target = dir_ / "someone-elses-file";
    for (const std::string kind : {"symlink", "directory", "fifo", "dev-zero"}) {
        SCOPED_TRACE(kind);
        fs::remove_all(tsv());
        std::ofstream(target) << "precious\n";
        if (kind == "symlink")
            fs::create_symlink(target, tsv());
        else if (kind == "directory")
            fs::create_directory(tsv());
        else if (kind == "fifo")
            ASSERT_EQ(::mkfifo(tsv().c_str(), 0600), 0);
        else
            fs::create_symlink("/dev/zero", tsv());
        r = kiln_cli(small_tune(), std::chrono::seconds(120));
        EXPECT_EQ(r.exit_status, 0) << r.output;
        EXPECT_EQ(count_of(r.output, "kiln: warning:"), 1u) << r.output;
        EXPECT_THAT(r.output, HasSubstr(tsv().string()));
        EXPECT_THAT(r.output, HasSubstr("variants benched"));  // tuned, in memory
        EXPECT_EQ(read_text(target), "precious\n");
    }
}

TEST_F(CliTest, CacheClearRemovesOnlyWhatKilnWroteAndSaysWhatItLeft) {
    warm_kernel_cache();
    CliRun r = kiln_cli(small_tune(), std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    const fs::path cache = dir_ / "cache";
    const fs::path foreign_dir = cache / "kernels" / "linux-6.1" / "drivers";
    fs::create_directories(foreign_dir);
    std::ofstream(foreign_dir / "Kconfig") << "menu";
    std::ofstream(cache / "autotune" / "notes.tsv") << "my own notes\n";
    std::ofstream(cache / "autotune" / "README") << "hello";
    r = kiln_cli({"cache", "clear"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("1 tuning files removed"));
    EXPECT_THAT(r.output, HasSubstr("left alone"));
    EXPECT_THAT(r.output, HasSubstr(foreign_dir.string()));
    EXPECT_THAT(r.output, HasSubstr((cache / "autotune" / "notes.tsv").string()));
    EXPECT_THAT(r.output, HasSubstr((cache / "autotune" / "README").string()));
    EXPECT_TRUE(fs::exists(foreign_dir / "Kconfig"));
    EXPECT_EQ(read_text(cache / "autotune" / "notes.tsv"), "my own notes\n");
    EXPECT_FALSE(fs::exists(tsv()));
    size_t bins = 0;
    for (const auto& e : fs::recursive_directory_iterator(cache))
        bins += e.path().extension() == ".bin";
    EXPECT_EQ(bins, 0u);
    EXPECT_FALSE(fs::exists(cache / "kernels" / cpu_device().info().id));
}

// A machine's decisions, exported and imported into another cache, are a hit there: `kiln tune`
// benches nothing.
TEST_F(CliTest, CacheExportThenImportElsewhereMakesTheTuneAHit) {
    warm_kernel_cache();
    CliRun r = kiln_cli(small_tune(), std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    const std::string file = (dir_ / "decisions.txt").string();
    r = kiln_cli({"cache", "export", file}, std::chrono::seconds(60));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("exported 1 tuning decisions of 1 devices"));
    fs::remove(tsv());
    r = kiln_cli({"cache", "import", file}, std::chrono::seconds(60));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("(1 new"));
    r = kiln_cli(small_tune(), std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("a hit: nothing benched"));
    std::ofstream(file, std::ios::trunc) << "not a kiln file\n";
    r = kiln_cli({"cache", "import", file}, std::chrono::seconds(60));
    EXPECT_NE(r.exit_status, 0);
    EXPECT_THAT(r.output, HasSubstr("line 1: expected the header"));
    r = kiln_cli({"cache", "import"}, std::chrono::seconds(60));
    EXPECT_NE(r.exit_status, 0);
}

TEST_F(CliTest, ProgramInfoShowsAFilesSignaturesAndPrepareAddsADeviceModelsPlans) {
    const std::string file = (dir_ / "double.kprog").string();
    {
        Program p = compile(
            [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0 + 1.0}; });
        p({Tensor::ones({3, 4}, DType::f32, cpu_device())});
        p.save(file);
    }
    const std::string cpu = "planned for " + cpu_device().info().id;
    CliRun r = kiln_cli({"program", "info", file}, std::chrono::seconds(60));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("signature 0: inputs (f32[3, 4])"));
    EXPECT_THAT(r.output, HasSubstr(cpu + ": 1 launches"));
    // As if planned on another model only: prepare plans it here too and keeps the other's.
    program::SavedProgram saved = program::read_program_file(file);
    saved.signatures[0].plans[0].device_id = "cpu-another-model";
    program::write_program_file(file, saved);
    r = kiln_cli({"program", "prepare", file, "--device", "cpu"}, std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("1 signature planned for " + cpu_device().info().id));
    r = kiln_cli({"program", "info", file}, std::chrono::seconds(60));
    EXPECT_THAT(r.output, HasSubstr("planned for cpu-another-model"));
    EXPECT_THAT(r.output, HasSubstr(cpu));
    r = kiln_cli({"program", "info", (dir_ / "absent.kprog").string()}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 2);
    EXPECT_THAT(r.output, HasSubstr("absent.kprog: does not exist"));
}

TEST_F(CliTest, CacheListCountsKernelsAndRememberedCompilerCrashes) {
    warm_kernel_cache();
    CliRun r = kiln_cli(small_tune(), std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    r = kiln_cli({"cache", "list"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("compiled kernels: "));
    EXPECT_THAT(r.output, Not(HasSubstr("compiler crashed")));
    const fs::path dir = dir_ / "cache" / "kernels" / cpu_device().info().id;
    ASSERT_TRUE(fs::is_directory(dir));
    std::ofstream(dir / (std::string(16, 'a') + ".crash")) << "signal 11";
    r = kiln_cli({"cache", "list"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("kernels whose compiler crashed (remembered, not retried): 1"));
}

TEST_F(CliTest, TuneContractionsRecordsAWinnerAndRefusesBadShapes) {
    CliRun r = kiln_cli({"tune", "attention", "--heads", "2", "--seq", "70", "--dim", "16",
                         "--causal", "--device", "cpu", "--json"},
                        std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("\"op\": \"attention\""));
    EXPECT_THAT(r.output,
                HasSubstr(fmt::format("\"benched\": {}", ops::attention_variants().size())));
    EXPECT_THAT(r.output, HasSubstr("seq_q=70"));
    r = kiln_cli({"tune", "attention", "--heads", "2", "--seq", "70", "--dim", "16", "--causal",
                  "--device", "cpu", "--json"},
                 std::chrono::seconds(300));
    EXPECT_THAT(r.output, HasSubstr("\"hit\": true")) << r.output;
    const std::pair<std::vector<std::string>, std::string> bad[] = {
        {{"tune", "matmul", "--m", "100000", "--n", "100000", "--k", "100000"},
         "kiln's kernels index with 32 bits"},
        {{"tune", "matmul", "--m", "0", "--n", "8", "--k", "8"},
         "--m: '0' given; expected a decimal whole number from 1"},
        {{"tune", "conv1d", "--channels", "8", "--length", "3", "--out-channels", "4", "--kernel",
          "5"},
         "expected a kernel that fits the padded input"},
        {{"tune", "conv1d", "--channels", "8", "--length", "30", "--out-channels", "4", "--kernel",
          "3", "--groups", "3"},
         "the channels a multiple of the groups"},
        {{"tune", "attention", "--heads", "2", "--seq", "8", "--dim", "999"},
         "head_dim 999; expected at most 256"}};
    for (const auto& [args, message] : bad) {
        std::vector<std::string> with_device = args;
        with_device.insert(with_device.end(), {"--device", "cpu"});
        r = kiln_cli(with_device, std::chrono::seconds(60));
        EXPECT_NE(r.exit_status, 0) << r.output;
        EXPECT_THAT(r.output, HasSubstr(message)) << r.output;
    }
}

TEST_F(CliTest, ConformancePrintsItsSummaryWritesJsonAndFailsOnAMiscompile) {
    const std::string json = (dir_ / "conformance.json").string();
    const std::vector<std::string> args = {"conformance", "--device",   "cpu",    "--area", "smoke",
                                           "--filter",    "add_square", "--runs", "1"};
    std::vector<std::string> with_json = args;
    with_json.insert(with_json.end(), {"--json", json});
    CliRun r = kiln_cli(with_json, std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("1 results: 1 passed, 0 skipped, 0 failed; 0 miscompiles"));
    const std::string text = read_text(json);
    for (const char* key :
         {"\"results\": 1", "\"passed\": 1", "\"skipped\": 0", "\"failed\": 0",
          "\"miscompiles\": 0", "\"cases\": [", "\"name\": \"add_square\"", "\"shape\": \"3001\""})
        EXPECT_THAT(text, HasSubstr(key)) << text;

    // Tiled map launches broken on purpose: the sweep names the miscompiles; exit status 1.
    ScopedEnv broken(std::map<std::string, std::optional<std::string>>{
        {"KILN_CONFORMANCE_BREAK", "map_tiling"}});
    std::vector<std::string> swept = args;
    swept.push_back("--sweep");
    r = kiln_cli(swept, std::chrono::seconds(300));
    EXPECT_EQ(r.exit_status, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr("MISCOMPILE output 0 element"));
    EXPECT_THAT(r.output, HasSubstr("smoke/add_square run 0 shape 3001"));
    EXPECT_THAT(r.output, Not(HasSubstr(" 0 miscompiles")));

    r = kiln_cli({"conformance", "--area", "nosuch"}, std::chrono::seconds(60));
    EXPECT_EQ(r.exit_status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("unknown area 'nosuch'; the areas are smoke"));
}

TEST_F(CliTest, AFirstRunOnATerminalShowsWhatItCompilesAndRacesThenErasesTheLine) {
    // script(1) gives kiln a pseudo-terminal; the profile's first run plans, compiles and races.
    const std::string command =
        fmt::format("{} profile softmax --rows 3 --n 40 --device cpu", cli_path());
    const CliRun on_terminal =
        run_cli({"/usr/bin/script", "-qec", command, "/dev/null"}, std::chrono::seconds(300));
    ASSERT_EQ(on_terminal.exit_status, 0) << on_terminal.output;
    EXPECT_THAT(on_terminal.output, HasSubstr("\r\033[Kkiln: compiling ")) << on_terminal.output;
    EXPECT_THAT(on_terminal.output, HasSubstr(" for ")) << on_terminal.output;
    EXPECT_THAT(on_terminal.output, HasSubstr("\r\033[K")) << on_terminal.output;
    // Not on a pipe, and not where KILN_PROGRESS=0.
    const CliRun piped =
        kiln_cli({"profile", "softmax", "--rows", "3", "--n", "40", "--device", "cpu"},
                 std::chrono::seconds(300));
    ASSERT_EQ(piped.exit_status, 0) << piped.output;
    EXPECT_THAT(piped.output, Not(HasSubstr("kiln: compiling"))) << piped.output;
    ScopedEnv quiet(std::map<std::string, std::optional<std::string>>{{"KILN_PROGRESS", "0"}});
    const CliRun off =
        run_cli({"/usr/bin/script", "-qec", command, "/dev/null"}, std::chrono::seconds(300));
    ASSERT_EQ(off.exit_status, 0) << off.output;
    EXPECT_THAT(off.output, Not(HasSubstr("kiln: compiling"))) << off.output;
}

// The profile prints the fusion decisions that chose its plan: softmax over rows of 40 elements
// is fused (one row launch); its segments form is refused, with the reason, and not chosen.
TEST_F(CliTest, ProfilePrintsTheFusionDecisionsWithTheirReasons) {
    const std::vector<std::string> args{"profile", "softmax", "--rows",   "3",
                                        "--n",     "40",      "--device", "cpu"};
    const CliRun r = kiln_cli(args, std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("fusion: every group fused where it can be: ")) << r.output;
    EXPECT_THAT(r.output, HasSubstr("fusion: group 0 segments refused: the group's folds are too "
                                    "short for segments; split instead (the group of %"))
        << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("not fused: "))) << r.output;
    std::vector<std::string> json = args;
    json.push_back("--json");
    const CliRun j = kiln_cli(json, std::chrono::seconds(300));
    ASSERT_EQ(j.exit_status, 0) << j.output;
    EXPECT_THAT(j.output, HasSubstr("\"fusion\": [\"every group fused where it can be: "))
        << j.output;
    EXPECT_THAT(j.output, HasSubstr("\"fusion_refusals\": []")) << j.output;
}

TEST_F(CliTest, ProfileOfTheMlpCaseRunsTwoContractionsBitIdentical) {
    const CliRun r =
        kiln_cli({"profile", "mlp", "--rows", "9", "--n", "24", "--device", "cpu", "--json"},
                 std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("\"bit_identical\": true")) << r.output;
    // linear + gelu, then linear + bias: a contraction launch each (their epilogues fused or
    // not, as the cost model finds cheaper on this machine).
    EXPECT_EQ(count_of(r.output, "graph_contract"), 2u) << r.output;
}

// bf16 inputs in the tensor-core class: off tensor cores (this machine's devices) the class runs
// the exact arithmetic, so the result is the oracle's bits; an integer dtype is refused.
TEST_F(CliTest, ProfileOfTheMlpCaseInBf16WithTensorCoresOffThemIsBitIdentical) {
    const CliRun r = kiln_cli({"profile", "mlp", "--rows", "9", "--n", "24", "--dtype", "bf16",
                               "--tensor-cores", "--device", "cpu", "--json"},
                              std::chrono::seconds(300));
    ASSERT_EQ(r.exit_status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("\"bit_identical\": true")) << r.output;
    EXPECT_EQ(count_of(r.output, "graph_contract"), 2u) << r.output;
    const CliRun bad = kiln_cli({"profile", "matmul", "--dtype", "i32", "--device", "cpu"},
                                std::chrono::seconds(60));
    EXPECT_NE(bad.exit_status, 0);
    EXPECT_THAT(bad.output, HasSubstr("inputs of dtype i32; expected f32, f16 or bf16"));
}

TEST_F(CliTest, ProfileOfTheConvAndAttentionCasesRunsOneLaunchEachBitIdentical) {
    // conv1d (bias and gelu after it, fused or not as the cost model finds cheaper) and causal
    // attention: one launch of the op each.
    for (const auto& [name, shape, launch] :
         {std::tuple{"conv1d", "2,6,40,5,3", "graph_conv1d"},
          std::tuple{"attention", "1,2,33,8", "graph_attention"}}) {
        const CliRun r = kiln_cli({"profile", name, "--shape", shape, "--device", "cpu", "--json"},
                                  std::chrono::seconds(300));
        ASSERT_EQ(r.exit_status, 0) << r.output;
        EXPECT_THAT(r.output, HasSubstr("\"bit_identical\": true")) << r.output;
        EXPECT_EQ(count_of(r.output, launch), 1u) << r.output;
    }
    const CliRun bad = kiln_cli({"profile", "conv1d", "--shape", "2,6,40", "--device", "cpu"},
                                std::chrono::seconds(60));
    EXPECT_NE(bad.exit_status, 0);
    EXPECT_THAT(bad.output, HasSubstr("expected batch,in_channels,length,out_channels,kernel"));
}

TEST_F(CliTest, WithoutHomeNothingIsWrittenAndOneWarningSaysSo) {
    ScopedEnv no_home({{"HOME", std::nullopt},
                       {"XDG_CACHE_HOME", std::nullopt},
                       {"KILN_CACHE_DIR", std::nullopt}});
    const CliRun r = kiln_cli(small_demo(), std::chrono::seconds(300));
    EXPECT_EQ(r.exit_status, 0) << r.output;
    EXPECT_EQ(count_of(r.output, "kiln: warning:"), 1u) << r.output;
    EXPECT_THAT(r.output, HasSubstr("no cache directory"));
    std::vector<fs::path> left;
    for (const auto& e : fs::directory_iterator(dir_ / "tmp")) left.push_back(e.path());
    EXPECT_TRUE(left.empty()) << left.front();  // no kiln-cache fallback under TMPDIR
    const CliRun path = kiln_cli({"cache", "path"}, std::chrono::seconds(60));
    EXPECT_THAT(path.output, HasSubstr("root:     (none: kept in memory only)"));
}

TEST_F(CliTest, CompileDirectoriesOfKilledProcessesAreRemoved) {
    // The pid of a process that has exited.
    const auto gone =
        runtime::cpu::run_process({"/bin/sh", "-c", "echo $$"}, std::chrono::seconds(10));
    const std::string gone_pid = gone.output.substr(0, gone.output.find('\n'));
    const fs::path tmp = dir_ / "tmp";
    const fs::path killed = tmp / fmt::format("kiln-cpu-{}-a1b2c3", gone_pid);
    const fs::path legacy_old = tmp / "kiln-cpu-d4e5f6";
    const fs::path running = tmp / fmt::format("kiln-cpu-{}-g7h8i9", getpid());
    const fs::path legacy_recent = tmp / "kiln-cpu-j0k1l2";
    const fs::path not_kilns = tmp / "kiln-cpu-notes";
    for (const auto& d : {killed, legacy_old, running, legacy_recent, not_kilns}) {
        fs::create_directories(d);
        std::ofstream(d / "kernel.cpp") << "int x;";
    }
    const auto now = fs::file_time_type::clock::now();
    fs::last_write_time(killed, now - std::chrono::minutes(2));
    fs::last_write_time(legacy_old, now - std::chrono::hours(2));
    fs::last_write_time(not_kilns, now - std::chrono::hours(2));
    const CliRun r = kiln_cli(small_demo(), std::chrono::seconds(300));  // compiles: a new cache
    EXPECT_EQ(r.exit_status, 0) << r.output;
    EXPECT_FALSE(fs::exists(killed));
    EXPECT_FALSE(fs::exists(legacy_old));
    EXPECT_TRUE(fs::exists(running));
    EXPECT_TRUE(fs::exists(legacy_recent));
    EXPECT_TRUE(fs::exists(not_kilns));
    size_t compile_dirs = 0;
    for (const auto& e : fs::directory_iterator(tmp))
        compile_dirs += e.path().filename().string().starts_with("kiln-cpu-");
    EXPECT_EQ(compile_dirs, 3u) << "the run left its own compile directory behind";
}

}  // namespace
