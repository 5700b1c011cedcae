// The autotuner: select-and-cache with fake variants, the margin, the TSV file (concurrent
// appends, garbage, unwritable directories, paths that are not regular files, compaction, memory
// proportional to live keys, clearing only kiln's files), digests, time_dispatches, and real DSL
// kernels.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "cache/paths.hpp"
#include "ir/hash.hpp"
#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "kiln/tune.hpp"
#include "plan/device_facts.hpp"
#include "support/errors.hpp"
#include "tune/decision_transfer.hpp"

extern char** environ;

using namespace kiln;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

namespace {

// What a fake variant's closure saw: how often it ran and with which iters.
struct Probe {
    std::vector<int> iters;
    size_t calls() const { return iters.size(); }
};

// A fake variant: returns `value` and `ms`, and records each call in `probe`.
Tuned<int>::Closure fake(Probe& probe, int value, double ms) {
    return [&probe, value, ms](int iters) {
        probe.iters.push_back(iters);
        return Timed<int>{value, ms};
    };
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

size_t count_of(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
}

class TuneTest : public ::testing::Test {
  protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        root_ = fs::temp_directory_path() /
                fmt::format("kiln-tune-test-{}-{}", getpid(), counter.fetch_add(1));
        fs::remove_all(root_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(root_, ec);
        fs::remove(root_.string() + "-file", ec);
    }
    // Four fake variants, "b" the fastest by far.
    Tuned<int> four(const std::string& key) {
        Tuned<int> t("fake_op", key, cpu_device());
        t.variant("a", fake(probes_[0], 10, 1.0))
            .variant("b", fake(probes_[1], 20, 0.5))
            .variant("c", fake(probes_[2], 30, 0.8))
            .variant("d", fake(probes_[3], 40, 0.9));
        return t;
    }
    std::string device_id() const { return cpu_device().info().id; }
    // A first run benches every variant; a second is a hit (from memory, when nothing is kept
    // on disk).
    void expect_tuned_then_hit(Tuner& tuner, const std::string& key) {
        auto first = four(key);
        EXPECT_EQ(first.run(tuner), 20);
        EXPECT_EQ(first.report().benched, 4);
        auto again = four(key);
        EXPECT_EQ(again.run(tuner), 20);
        EXPECT_TRUE(again.report().hit);
    }
    // Starts `count` copies of this test binary running only `test`, each with root_ in the
    // variable `root_variable` and its index in KILN_TUNE_CHILD_INDEX.
    std::vector<pid_t> spawn_children(const std::string& test, const std::string& root_variable,
                                      int count) const {
        const std::string exe = fs::read_symlink("/proc/self/exe").string();
        std::string filter = "--gtest_filter=" + test;
        std::vector<pid_t> pids;
        for (int p = 0; p < count; ++p) {
            std::vector<std::string> env;
            for (char** e = environ; *e; ++e) env.emplace_back(*e);
            env.push_back(root_variable + "=" + root_.string());
            env.push_back(fmt::format("KILN_TUNE_CHILD_INDEX={}", p));
            std::vector<char*> envp;
            for (auto& s : env) envp.push_back(s.data());
            envp.push_back(nullptr);
            std::string arg0 = exe;
            char* argv[] = {arg0.data(), filter.data(), nullptr};
            pid_t pid = 0;
            EXPECT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
            if (pid > 0) pids.push_back(pid);
        }
        return pids;
    }

    fs::path root_;
    Probe probes_[4];
};

TEST_F(TuneTest, FirstRunBenchesEveryVariantThenTheWinnerRunsOnce) {
    Tuner tuner(root_);
    auto first = four("n=4096");
    EXPECT_EQ(first.run(tuner), 20);
    EXPECT_EQ(first.report().benched, 4);
    EXPECT_FALSE(first.report().hit);
    EXPECT_EQ(first.report().winner, "b");
    EXPECT_EQ(first.report().variant_ms.size(), 4u);
    for (const auto& p : probes_) EXPECT_EQ(p.iters, std::vector<int>{TUNE_ITERS});
    EXPECT_EQ(first.report().cache_file, root_ / (device_id() + ".tsv"));
    EXPECT_EQ(read_text(tuner.file_for(device_id())), "fake_op\t" + first.full_key() + "\tb\n");

    auto second = four("n=4096");
    EXPECT_EQ(second.run(tuner), 20);
    EXPECT_EQ(second.report().benched, 0);
    EXPECT_TRUE(second.report().hit);
    EXPECT_EQ(probes_[1].iters, (std::vector<int>{TUNE_ITERS, 1}));
    for (int i : {0, 2, 3}) EXPECT_EQ(probes_[i].calls(), 1u) << i;

    auto c = tuner.counters();
    EXPECT_EQ(c.benched, 4u);
    EXPECT_EQ(c.hits, 1u);
    EXPECT_EQ(c.misses, 1u);
    EXPECT_EQ(c.retunes, 0u);

    // A fresh tuner over the same root reloads the decision from disk.
    Tuner reloaded(root_);
    auto third = four("n=4096");
    EXPECT_EQ(third.run(reloaded), 20);
    EXPECT_EQ(third.report().benched, 0);
    EXPECT_TRUE(third.report().hit);
    EXPECT_EQ(reloaded.counters().hits, 1u);
    EXPECT_EQ(reloaded.counters().benched, 0u);
    for (int i : {0, 2, 3}) EXPECT_EQ(probes_[i].calls(), 1u) << i;
}

TEST_F(TuneTest, AVariantTableMakesOnlyTheClosuresThatRun) {
    // The same four variants as four(), declared as a table: a miss makes every closure once, a
    // hit makes the winner's alone, and the key equals the one-by-one declaration's.
    const std::vector<std::string> names = {"a", "b", "c", "d"}, ids = {"1", "2", "3", "4"};
    const int values[] = {10, 20, 30, 40};
    const double ms[] = {1.0, 0.5, 0.8, 0.9};
    std::vector<int> made(4, 0);
    auto table = [&](const std::string& key) {
        Tuned<int> t("fake_op", key, cpu_device());
        t.variants(
            names.size(), [&](size_t i) -> std::string_view { return names[i]; },
            [&](size_t i) -> std::string_view { return ids[i]; },
            [&](size_t i) {
                ++made[i];
                return fake(probes_[i], values[i], ms[i]);
            });
        return t;
    };
    Tuned<int> one_by_one("fake_op", "n=8", cpu_device());
    for (size_t i = 0; i < names.size(); ++i)
        one_by_one.variant(names[i], fake(probes_[i], values[i], ms[i]), ids[i]);
    EXPECT_EQ(table("n=8").full_key(), one_by_one.full_key());
    EXPECT_EQ(made, (std::vector<int>{0, 0, 0, 0}));  // declaring makes nothing

    Tuner tuner(root_);
    auto miss = table("n=8");
    EXPECT_EQ(miss.run(tuner), 20);
    EXPECT_EQ(miss.report().benched, 4);
    EXPECT_EQ(made, (std::vector<int>{1, 1, 1, 1}));
    auto hit = table("n=8");
    EXPECT_EQ(hit.run(tuner), 20);
    EXPECT_TRUE(hit.report().hit);
    EXPECT_EQ(made, (std::vector<int>{1, 2, 1, 1}));
    EXPECT_EQ(probes_[1].iters, (std::vector<int>{TUNE_ITERS, 1}));

    // Names are checked as variant() checks them, against the variants declared before too.
    Tuned<int> bad("fake_op", "n=8", cpu_device());
    bad.variant("b", fake(probes_[0], 1, 1.0));
    const auto make = [&](size_t i) { return fake(probes_[i], 1, 1.0); };
    EXPECT_THROW(bad.variants(
                     2, [&](size_t i) -> std::string_view { return names[i]; },
                     [](size_t) -> std::string_view { return ""; }, make),
                 Error);
    Tuned<int> tab("fake_op", "n=8", cpu_device());
    EXPECT_THROW(tab.variants(
                     1, [](size_t) -> std::string_view { return "a\tb"; },
                     [](size_t) -> std::string_view { return ""; }, make),
                 Error);
}

TEST_F(TuneTest, AVariantTableIsCheckedOnceAndGivesTheSameKey) {
    // A VariantTable built once serves every call: its variants run and hit like the same
    // variants declared one by one, under the same key; closures are made only when they run.
    const VariantTable table("fake_op", {"a", "b", "c", "d"}, {"1", "2", "3", "4"});
    const int values[] = {10, 20, 30, 40};
    const double ms[] = {1.0, 0.5, 0.8, 0.9};
    std::vector<int> made(4, 0);
    auto tuned = [&](const std::string& key) {
        Tuned<int> t("fake_op", key, cpu_device());
        t.variants(table, [&](size_t i) {
            ++made[i];
            return fake(probes_[i], values[i], ms[i]);
        });
        return t;
    };
    Tuned<int> one_by_one("fake_op", "n=8", cpu_device());
    for (size_t i = 0; i < table.size(); ++i)
        one_by_one.variant(table.name(i), fake(probes_[i], values[i], ms[i]), table.identity(i));
    EXPECT_EQ(tuned("n=8").full_key(), one_by_one.full_key());
    Tuner tuner(root_);
    auto miss = tuned("n=8");
    EXPECT_EQ(miss.run(tuner), 20);
    EXPECT_EQ(miss.report().winner, "b");
    EXPECT_EQ(made, (std::vector<int>{1, 1, 1, 1}));
    auto hit = tuned("n=8");
    EXPECT_EQ(hit.run(tuner), 20);
    EXPECT_TRUE(hit.report().hit);
    EXPECT_EQ(made, (std::vector<int>{1, 2, 1, 1}));
    // After other variants the table's names are checked against theirs and digested in turn.
    Tuned<int> after("fake_op", "n=8", cpu_device());
    after.variant("e", fake(probes_[0], 1, 1.0), "5");
    after.variants(table, [&](size_t i) { return fake(probes_[i], values[i], ms[i]); });
    Tuned<int> after_by_one("fake_op", "n=8", cpu_device());
    after_by_one.variant("e", fake(probes_[0], 1, 1.0), "5");
    for (size_t i = 0; i < table.size(); ++i)
        after_by_one.variant(table.name(i), fake(probes_[i], 1, 1.0), table.identity(i));
    EXPECT_EQ(after.full_key(), after_by_one.full_key());
    Tuned<int> clash("fake_op", "n=8", cpu_device());
    clash.variant("c", fake(probes_[0], 1, 1.0));
    EXPECT_THROW(clash.variants(table, [&](size_t i) { return fake(probes_[i], 1, 1.0); }), Error);
    // A table checks its names when it is built.
    auto error_of = [](const std::function<void()>& f) -> std::string {
        try {
            f();
        } catch (const Error& e) {
            return e.what();
        }
        return "no error";
    };
    EXPECT_THAT(error_of([] {
                    VariantTable("op_x", {"a", "a"}, {"1", "2"});
                }),
                HasSubstr("two variants named 'a'"));
    EXPECT_THAT(error_of([] { VariantTable("op_x", {"a\tb"}, {"1"}); }),
                HasSubstr("tab or newline"));
    EXPECT_THAT(error_of([] {
                    VariantTable("op_x", {"a", "b"}, {"1"});
                }),
                HasSubstr("2 variant names but 1 identities"));
}

TEST_F(TuneTest, DistinctKeysAreIndependentDecisions) {
    Tuner tuner(root_);
    auto one = four("n=1");
    one.run(tuner);
    auto other = four("n=2");
    EXPECT_EQ(other.run(tuner), 20);
    EXPECT_EQ(other.report().benched, 4);
    for (const auto& p : probes_) EXPECT_EQ(p.iters, (std::vector<int>{TUNE_ITERS, TUNE_ITERS}));
    EXPECT_EQ(tuner.entries(device_id()).size(), 2u);
    // The same key on another device is another decision too.
    EXPECT_FALSE(tuner.winner("another-device", "fake_op", one.full_key()).has_value());
}

TEST_F(TuneTest, FullKeyCarriesTheVariantDigest) {
    auto t = four("rows=1,n=4096");
    const std::string k = t.full_key();
    ASSERT_EQ(k.size(), std::string("rows=1,n=4096#").size() + 8) << k;
    EXPECT_TRUE(k.starts_with("rows=1,n=4096#")) << k;
    EXPECT_EQ(k.find_first_not_of("0123456789abcdef", k.size() - 8), std::string::npos) << k;
    EXPECT_EQ(four("rows=1,n=4096").full_key(), k);
    // A variant added after the key was taken is in the next key.
    Probe p;
    t.variant("late", fake(p, 5, 1.0), "late-id");
    EXPECT_NE(t.full_key(), k);
    EXPECT_TRUE(t.full_key().starts_with("rows=1,n=4096#"));
    // Names and identities are separated: moving a character across the boundary changes it.
    EXPECT_NE(variant_digest({{"ab", ""}}), variant_digest({{"a", "b"}}));
    EXPECT_NE(variant_digest({{"a", "b"}, {"c", ""}}), variant_digest({{"a", ""}, {"bc", ""}}));
    EXPECT_NE(variant_digest({{"a", "1"}, {"b", "2"}}), variant_digest({{"b", "2"}, {"a", "1"}}));
    EXPECT_EQ(variant_digest({{"a", "1"}}), variant_digest({{"a", "1"}}));
}

TEST_F(TuneTest, ChangedVariantIdentityRetunes) {
    Tuner tuner(root_);
    Probe p1, p2, q1, q2;
    Tuned<int> before("fake_op", "n=8", cpu_device());
    before.variant("x", fake(p1, 1, 1.0), "kernel-hash-1").variant("y", fake(p2, 2, 2.0), "h2");
    EXPECT_EQ(before.run(tuner), 1);
    Tuned<int> after("fake_op", "n=8", cpu_device());
    after.variant("x", fake(q1, 1, 1.0), "kernel-hash-1-changed")
        .variant("y", fake(q2, 2, 2.0), "h2");
    EXPECT_NE(after.full_key(), before.full_key());
    EXPECT_EQ(after.run(tuner), 1);
    EXPECT_FALSE(after.report().hit);
    EXPECT_EQ(after.report().benched, 2);
    EXPECT_EQ(q1.iters, std::vector<int>{TUNE_ITERS});
    EXPECT_EQ(q2.iters, std::vector<int>{TUNE_ITERS});
    EXPECT_EQ(tuner.counters().misses, 2u);
}

TEST_F(TuneTest, ShrunkVariantSetWithoutTheWinnerRetunes) {
    Tuner tuner(root_);
    auto full = four("n=64");
    full.run(tuner);
    ASSERT_EQ(full.report().winner, "b");

    // Dropping the winner changes the digest: a different key, benched afresh.
    Probe pa, pc, pd;
    auto shrunk = [&] {
        Tuned<int> t("fake_op", "n=64", cpu_device());
        t.variant("a", fake(pa, 10, 1.0))
            .variant("c", fake(pc, 30, 0.8))
            .variant("d", fake(pd, 40, 0.9));
        return t;
    };
    auto s1 = shrunk();
    EXPECT_EQ(s1.run(tuner), 30);
    EXPECT_EQ(s1.report().benched, 3);
    EXPECT_FALSE(s1.report().retuned);

    // A cached winner that is not offered under this very key: re-tuned, and counted so.
    tuner.record(device_id(), "fake_op", s1.full_key(), "b");
    auto s2 = shrunk();
    EXPECT_EQ(s2.run(tuner), 30);
    EXPECT_TRUE(s2.report().retuned);
    EXPECT_FALSE(s2.report().hit);
    EXPECT_EQ(s2.report().benched, 3);
    EXPECT_EQ(pa.iters, (std::vector<int>{TUNE_ITERS, TUNE_ITERS}));
    auto c = tuner.counters();
    EXPECT_EQ(c.retunes, 1u);
    EXPECT_EQ(c.misses, 3u);
    EXPECT_EQ(c.benched, 4u + 3u + 3u);
    EXPECT_EQ(tuner.winner(device_id(), "fake_op", s1.full_key()), "c");

    // The re-tuned decision was saved: a fresh tuner hits it.
    Tuner reloaded(root_);
    auto s3 = shrunk();
    EXPECT_EQ(s3.run(reloaded), 30);
    EXPECT_TRUE(s3.report().hit);
    EXPECT_EQ(pc.iters.back(), 1);
}

TEST(ChooseWinner, FastestUnlessTheFirstIsWithinTheMargin) {
    EXPECT_EQ(choose_winner({1.0, 0.99}), 0u);  // 1% faster loses
    EXPECT_EQ(choose_winner({1.0, 0.90}), 1u);  // 10% faster wins
    EXPECT_EQ(choose_winner({1.0, 0.99, 0.90, 0.95}), 2u);
    EXPECT_EQ(choose_winner({2.0, 1.0, 1.0}), 1u);  // ties: the lowest index
    EXPECT_EQ(choose_winner({1.0, 1.0}), 0u);
    EXPECT_EQ(choose_winner({0.5, 1.0, 2.0}), 0u);
    EXPECT_EQ(choose_winner({1.0, 0.9}, 0.2), 0u);
    EXPECT_EQ(choose_winner({1.0, 0.99}, 0.0), 1u);
    EXPECT_EQ(choose_winner({7.0}), 0u);
    EXPECT_EQ(choose_winner({std::numeric_limits<double>::infinity(), 1.0}), 1u);
}

TEST(ChooseWinner, RejectsTimingsThatAreNotReal) {
    auto message = [](std::vector<double> m) {
        try {
            choose_winner(m);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message({1.0, 2.0, std::nan("")}).find("variant 2"), std::string::npos)
        << message({1.0, 2.0, std::nan("")});
    EXPECT_NE(message({1.0, -0.5}).find("variant 1"), std::string::npos) << message({1.0, -0.5});
    EXPECT_THROW(choose_winner({}), Error);
}

TEST_F(TuneTest, TheMarginKeepsTheFirstDeclaredUnlessClearlyBeaten) {
    Tuner tuner(root_);
    auto decide = [&](const std::string& key, double challenger_ms) {
        Probe p0, p1;
        Tuned<int> t("margin_op", key, cpu_device());
        t.variant("first", fake(p0, 1, 1.0)).variant("challenger", fake(p1, 2, challenger_ms));
        const int out = t.run(tuner);
        EXPECT_EQ(out, t.report().winner == "first" ? 1 : 2);
        return t.report().winner;
    };
    EXPECT_EQ(decide("close", 0.99), "first");
    EXPECT_EQ(decide("clear", 0.90), "challenger");
    // Stable on repeat: deciding again from nothing gives the same answers.
    for (int round = 0; round < 3; ++round) {
        tuner.clear();
        EXPECT_EQ(decide("close", 0.99), "first");
        EXPECT_EQ(decide("clear", 0.90), "challenger");
    }
    EXPECT_EQ(tuner.counters().hits, 0u);
    EXPECT_EQ(decide("close", 0.5), "first");  // cached: the timing is not looked at again
}

// Run by ConcurrentProcessesLoseAndTearNoLine in child processes.
TEST(TuneChild, AppendsKeys) {
    const char* root = std::getenv("KILN_TUNE_CHILD_ROOT");
    const char* index = std::getenv("KILN_TUNE_CHILD_INDEX");
    if (!root || !index) GTEST_SKIP() << "runs only as a child of ConcurrentProcesses...";
    const fs::path go = fs::path(root) / "go";
    for (int i = 0; i < 30000 && !fs::exists(go); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Tuner tuner(root);
    for (int j = 0; j < 200; ++j)
        tuner.record("race-device", "race_op", fmt::format("p{}-k{}", index, j),
                     fmt::format("winner-{}-{}", index, j));
}

TEST_F(TuneTest, ConcurrentProcessesLoseAndTearNoLine) {
    fs::create_directories(root_);
    const auto pids = spawn_children("TuneChild.AppendsKeys", "KILN_TUNE_CHILD_ROOT", 8);
    std::ofstream(root_ / "go") << "go";
    for (pid_t pid : pids) {
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
    }
    Tuner reloaded(root_);
    const auto entries = reloaded.entries("race-device");
    EXPECT_EQ(entries.size(), 1600u);
    EXPECT_EQ(reloaded.skipped_lines("race-device"), 0u);
    for (int p = 0; p < 8; ++p)
        for (int j = 0; j < 200; ++j)
            ASSERT_EQ(reloaded.winner("race-device", "race_op", fmt::format("p{}-k{}", p, j)),
                      fmt::format("winner-{}-{}", p, j));
    EXPECT_EQ(count_of(read_text(reloaded.file_for("race-device")), "\n"), 1600u);
}

TEST_F(TuneTest, GarbageBlankMalformedAndTornLinesAreSkippedAndCounted) {
    fs::create_directories(root_);
    Tuner tuner(root_);
    std::ofstream(tuner.file_for("dev"), std::ios::binary) << "op1\tk1\tw1\n"
                                                           << "\x01\x02garbage \xff\n"
                                                           << "\n"
                                                           << "op2\tk2\n"
                                                           << "op3\tk3\tw3\textra\n"
                                                           << "op4\tk4\tw4\n"
                                                           << "op6\t\tw6\n"
                                                           << "op1\tk1\tw1b\n"
                                                           << "op5\tk5\tw5";  // torn: no newline
    const auto entries = tuner.entries("dev");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].op, "op4");
    EXPECT_EQ(entries[0].winner, "w4");
    EXPECT_EQ(entries[1].op, "op1");
    EXPECT_EQ(entries[1].winner, "w1b");  // the last line for a key wins
    EXPECT_EQ(tuner.skipped_lines("dev"), 6u);
    EXPECT_FALSE(tuner.winner("dev", "op2", "k2").has_value());
    EXPECT_FALSE(tuner.winner("dev", "op3", "k3").has_value());
    EXPECT_FALSE(tuner.winner("dev", "op5", "k5").has_value());
    EXPECT_EQ(tuner.winner("dev", "op1", "k1"), "w1b");

    // A line appended after the torn one stays whole.
    tuner.record("dev", "op7", "k7", "w7");
    Tuner reloaded(root_);
    EXPECT_EQ(reloaded.winner("dev", "op7", "k7"), "w7");
    EXPECT_EQ(reloaded.winner("dev", "op1", "k1"), "w1b");
}

TEST_F(TuneTest, UnwritableDirectoryKeepsWinnersInMemoryAndWarnsOnce) {
    // A regular file where the directory should be: no one, not even root, can create it.
    const fs::path blocker = root_.string() + "-file";
    std::ofstream(blocker) << "x";
    const fs::path root = blocker / "sub";
    ::testing::internal::CaptureStderr();
    Tuner tuner(root);
    expect_tuned_then_hit(tuner, "n=1");  // in memory
    Tuner fresh(root);
    auto third = four("n=1");
    EXPECT_EQ(third.run(fresh), 20);
    EXPECT_EQ(third.report().benched, 4);  // nothing was saved
    EXPECT_FALSE(third.report().hit);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "not writable"), 1u) << err;
    EXPECT_NE(err.find(root.string()), std::string::npos) << err;
}

TEST_F(TuneTest, TabsAndNewlinesInFieldsAreErrors) {
    Tuner tuner(root_);
    auto message = [](auto&& f) {
        try {
            f();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message([&] { tuner.record("dev", "o\tp", "k", "w"); }).find("op"),
              std::string::npos);
    EXPECT_NE(message([&] { tuner.record("dev", "op", "k\ney", "w"); }).find("key"),
              std::string::npos);
    EXPECT_NE(message([&] { tuner.record("dev", "op", "key", "w\tin"); }).find("winner"),
              std::string::npos);
    EXPECT_THROW(tuner.winner("dev", "op", "k\tey"), Error);
    EXPECT_FALSE(fs::exists(tuner.file_for("dev")));  // nothing was written

    // Through Tuned: the error comes before any variant runs.
    Probe p;
    Tuned<int> bad_op("rms\tnorm", "n=1", cpu_device());
    bad_op.variant("a", fake(p, 1, 1.0));
    EXPECT_THROW(bad_op.run(tuner), Error);
    Tuned<int> bad_key("rms_norm", "n=1\n", cpu_device());
    bad_key.variant("a", fake(p, 1, 1.0));
    EXPECT_THROW(bad_key.run(tuner), Error);
    EXPECT_EQ(p.calls(), 0u);
    Tuned<int> bad_name("rms_norm", "n=1", cpu_device());
    EXPECT_THROW(bad_name.variant("a\tb", fake(p, 1, 1.0)), Error);
    EXPECT_THROW(bad_name.variant("a", fake(p, 1, 1.0)).variant("a", fake(p, 1, 1.0)), Error);
    Tuned<int> empty("rms_norm", "n=1", cpu_device());
    EXPECT_THROW(empty.run(tuner), Error);
}

TEST_F(TuneTest, ClearForgetsOneDeviceOrAll) {
    Tuner tuner(root_);
    tuner.record("dev1", "op", "k", "w1");
    tuner.record("dev2", "op", "k", "w2");
    std::ofstream(root_ / "keep.txt") << "not a table";
    tuner.clear("dev1");
    EXPECT_FALSE(fs::exists(tuner.file_for("dev1")));
    EXPECT_TRUE(fs::exists(tuner.file_for("dev2")));
    EXPECT_FALSE(tuner.winner("dev1", "op", "k").has_value());
    EXPECT_EQ(tuner.winner("dev2", "op", "k"), "w2");
    tuner.clear();
    EXPECT_FALSE(fs::exists(tuner.file_for("dev2")));
    EXPECT_FALSE(tuner.winner("dev2", "op", "k").has_value());
    EXPECT_TRUE(fs::exists(root_ / "keep.txt"));
}

// kiln cache export on one machine, import on another: the decisions arrive, a tuned op hits.
TEST_F(TuneTest, ExportedDecisionsImportIntoAnotherCacheAndHit) {
    fs::create_directories(root_);
    Tuner source(root_ / "source");
    expect_tuned_then_hit(source, "shape=1");
    source.record("other-gpu", "op", "k", "w");
    source.record("other-gpu", "op", "k", "w2");  // only the live decision travels
    const fs::path file = root_ / "decisions.txt";
    const auto out = tune::export_decisions(source, {device_id(), "other-gpu", "absent"}, file);
    EXPECT_EQ(out.devices, 2u);
    EXPECT_EQ(out.decisions, 2u);
    Tuner target(root_ / "target");
    const auto in = tune::import_decisions(target, file);
    EXPECT_EQ(in.devices, 2u);
    EXPECT_EQ(in.decisions, 2u);
    EXPECT_EQ(in.recorded, 2u);
    EXPECT_EQ(target.winner("other-gpu", "op", "k"), "w2");
    auto tuned = four("shape=1");
    EXPECT_EQ(tuned.run(target), 20);
    EXPECT_TRUE(tuned.report().hit);
    EXPECT_EQ(tuned.report().benched, 0);
    // Again: nothing new; the target's file gains no line.
    const auto lines = tune::import_decisions(target, file);
    EXPECT_EQ(lines.recorded, 0u);
    Tuner reread(root_ / "target");
    EXPECT_EQ(reread.entries("other-gpu").size(), 1u);
    EXPECT_EQ(reread.skipped_lines("other-gpu"), 0u);
}

// A file that is not an export, truncated, edited into bad lines, or not a regular file is an
// error naming the line, and nothing of it is recorded.
TEST_F(TuneTest, ABadDecisionsFileIsAnErrorAndRecordsNothing) {
    fs::create_directories(root_);
    Tuner target(root_ / "target");
    const std::string header = std::string(tune::kDecisionsHeader) + "\n";
    const std::string good = "dev\top\tk\tw\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"op\tk\tw\n", "line 1: expected the header"},
        {header + good + "dev\top\tk2\tw", "line 3: it ends without a newline"},
        {header + good + "dev\top\tk2\n", "line 3: expected four non-empty fields"},
        {header + good + "dev\top\t\tw\n", "line 3: expected four"},
        {header + good + "dev\top\tk\tw\r\n", "line 3: expected four"},
        {header + good + "\n", "line 3: expected four"},
        {header + "../x\top\tk\tw\n", "line 2: '../x' is not a device id"},
        {header + ".tsv\top\tk\tw\n", "line 2: '.tsv' is not a device id"},
    };
    const fs::path file = root_ / "decisions.txt";
    for (const auto& [text, message] : cases) {
        std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
        test::expect_error_naming("kiln cache import",
                                  [&] { tune::import_decisions(target, file); }, {message});
        EXPECT_FALSE(target.winner("dev", "op", "k").has_value()) << message;
    }
    fs::remove(file);
    test::expect_error_naming("kiln cache import", [&] { tune::import_decisions(target, file); },
                              {"no such file"});
    ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
    test::expect_error_naming("kiln cache import", [&] { tune::import_decisions(target, file); },
                              {"is a FIFO"});
    fs::remove(file);
    std::ofstream(root_ / "real.txt") << header << good;
    fs::create_symlink(root_ / "real.txt", file);
    test::expect_error_naming("kiln cache import", [&] { tune::import_decisions(target, file); },
                              {"is a symbolic link"});
    EXPECT_FALSE(target.winner("dev", "op", "k").has_value());
    EXPECT_FALSE(fs::exists(target.file_for("dev")));
}

TEST_F(TuneTest, ClearLeavesWhatKilnDidNotWrite) {
    Tuner tuner(root_);
    tuner.record("dev1", "op", "k", "w1");
    std::ofstream(root_ / "notes.tsv") << "a table of mine\nwith lines\n";
    std::ofstream(root_ / "Bad Name.tsv") << "op\tk\tw\n";
    std::ofstream(root_ / "dev2.tsv");  // empty: kiln's
    fs::create_directory(root_ / "dir.tsv");
    std::ofstream(root_ / "elsewhere") << "op\tk\tw\n";
    fs::create_symlink(root_ / "elsewhere", root_ / "link.tsv");
    std::vector<fs::path> left;
    EXPECT_EQ(tuner.clear("", &left), 2u);
    std::sort(left.begin(), left.end());
    std::vector<fs::path> expected = {root_ / "Bad Name.tsv", root_ / "dir.tsv",
                                      root_ / "elsewhere", root_ / "link.tsv", root_ / "notes.tsv"};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(left, expected);
    EXPECT_FALSE(fs::exists(root_ / "dev1.tsv"));
    EXPECT_FALSE(fs::exists(root_ / "dev2.tsv"));
    EXPECT_EQ(read_text(root_ / "elsewhere"), "op\tk\tw\n");
    // One device: only its own file is looked at.
    tuner.record("dev3", "op", "k", "w3");
    left.clear();
    EXPECT_EQ(tuner.clear("dev3", &left), 1u);
    EXPECT_TRUE(left.empty());
    EXPECT_EQ(tuner.clear("notes", &left), 0u);  // a name kiln could have written, but not a TSV
    EXPECT_EQ(left, std::vector<fs::path>{root_ / "notes.tsv"});
}

// The device's TSV replaced by something that is not a regular file: every case warns once, tunes
// in memory, and never reads, writes or blocks on what is there.
TEST_F(TuneTest, ATsvThatIsNotARegularFileIsNeverFollowed) {
    const std::vector<std::string> cases = {"symlink", "directory", "fifo", "dev-zero"};
    for (const auto& kind : cases) {
        SCOPED_TRACE(kind);
        const fs::path root = root_ / kind;
        fs::create_directories(root);
        Tuner tuner(root);
        const fs::path tsv = tuner.file_for(device_id());
        const fs::path target = root_ / (kind + "-target");
        if (kind == "symlink") {
            std::ofstream(target) << "fake_op\tsomething\tc\n";
            fs::create_symlink(target, tsv);
        } else if (kind == "directory") {
            fs::create_directory(tsv);
        } else if (kind == "fifo") {
            ASSERT_EQ(::mkfifo(tsv.c_str(), 0600), 0);
        } else {
            fs::create_symlink("/dev/zero", tsv);
        }
        ::testing::internal::CaptureStderr();
        expect_tuned_then_hit(tuner, "n=1");  // in memory
        const std::string err = ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(count_of(err, "kiln: warning:"), 1u) << err;
        EXPECT_NE(err.find(tsv.string()), std::string::npos) << err;
        if (kind == "symlink") {
            EXPECT_EQ(read_text(target), "fake_op\tsomething\tc\n");
        }
        for (auto& p : probes_) p.iters.clear();
    }
}

// A TSV of `lines` lines for `keys` keys (each key recorded again and again).
void write_tsv(const fs::path& path, int lines, int keys) {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < lines; ++i) out << "op\tk" << i % keys << "\tw" << i << "\n";
}

TEST_F(TuneTest, AFileWhoseDeadLinesDominateIsCompactedAsItLoads) {
    fs::create_directories(root_);
    const fs::path path = root_ / "dev.tsv";
    write_tsv(path, 5000, 10);
    std::ofstream(path, std::ios::app) << "garbage\n";
    Tuner tuner(root_);
    const auto entries = tuner.entries("dev");
    ASSERT_EQ(entries.size(), 10u);
    for (int j = 0; j < 10; ++j) {
        EXPECT_EQ(entries[j].key, fmt::format("k{}", j));  // in the order of their last lines
        EXPECT_EQ(entries[j].winner, fmt::format("w{}", 4990 + j));
    }
    std::string expected;
    for (int j = 0; j < 10; ++j) expected += fmt::format("op\tk{}\tw{}\n", j, 4990 + j);
    EXPECT_EQ(read_text(path), expected);
    EXPECT_EQ(tuner.skipped_lines("dev"), 0u);
    // A few dead lines are not worth a rewrite.
    write_tsv(path, 100, 10);
    Tuner small(root_);
    EXPECT_EQ(small.entries("dev").size(), 10u);
    EXPECT_EQ(count_of(read_text(path), "\n"), 100u);
}

// Run by CompactionsRacingAppendsLoseNoLine in child processes.
TEST(TuneChild, RecordsKeysSlowly) {
    const char* root = std::getenv("KILN_TUNE_COMPACT_ROOT");
    const char* index = std::getenv("KILN_TUNE_CHILD_INDEX");
    if (!root || !index) GTEST_SKIP() << "runs only as a child of CompactionsRacing...";
    Tuner tuner(root);
    for (int j = 0; j < 150; ++j) {
        tuner.record("dev", "race_op", fmt::format("p{}-k{}", index, j), "w");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

TEST_F(TuneTest, CompactionsRacingAppendsLoseNoLine) {
    fs::create_directories(root_);
    const auto pids = spawn_children("TuneChild.RecordsKeysSlowly", "KILN_TUNE_COMPACT_ROOT", 3);
    // Meanwhile: pile up dead lines and load, so the file is compacted again and again.
    int compactions = 0;
    for (int round = 0; round < 40; ++round) {
        Tuner writer(root_);
        for (int i = 0; i < 1100; ++i) writer.record("dev", "filler", "f", fmt::format("w{}", i));
        const auto lines = count_of(read_text(root_ / "dev.tsv"), "\n");
        Tuner loader(root_);
        EXPECT_EQ(loader.winner("dev", "filler", "f"), "w1099");
        if (count_of(read_text(root_ / "dev.tsv"), "\n") < lines) ++compactions;
    }
    EXPECT_GT(compactions, 0);
    for (pid_t pid : pids) {
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
    }
    Tuner reloaded(root_);
    for (int p = 0; p < 3; ++p)
        for (int j = 0; j < 150; ++j)
            ASSERT_EQ(reloaded.winner("dev", "race_op", fmt::format("p{}-k{}", p, j)), "w")
                << p << " " << j;
}

TEST_F(TuneTest, ALoadedTableHoldsMemoryForItsLiveKeysOnly) {
    fs::create_directories(root_);
    const fs::path path = root_ / "dev.tsv";
    {
        // About 20 MB: 200000 lines, each a re-tune of one of 4 keys, with long winner names.
        std::ofstream out(path, std::ios::binary);
        const std::string pad(80, 'x');
        for (int i = 0; i < 200000; ++i)
            out << "op\tkey" << i % 4 << "\twinner" << pad << i << "\n";
    }
    const size_t before = mallinfo2().uordblks;
    Tuner tuner(root_);
    EXPECT_EQ(tuner.entries("dev").size(), 4u);
    const size_t held = mallinfo2().uordblks - std::min(before, mallinfo2().uordblks);
    EXPECT_LT(held, size_t{1} << 20) << "bytes held after loading 4 live keys of a 20 MB file";
    EXPECT_EQ(tuner.winner("dev", "op", "key3"), "winner" + std::string(80, 'x') + "199999");
}

TEST_F(TuneTest, StaleTemporariesOfCompactionsAreRemoved) {
    fs::create_directories(root_);
    char arg0[] = "/bin/true";
    char* argv[] = {arg0, nullptr};
    pid_t gone = 0;
    ASSERT_EQ(posix_spawn(&gone, arg0, nullptr, nullptr, argv, environ), 0);
    waitpid(gone, nullptr, 0);
    const fs::path stale = root_ / fmt::format(".dev.tsv.{}.abc.tmp", gone);
    const fs::path live = root_ / fmt::format(".dev.tsv.{}.abd.tmp", getpid());
    std::ofstream(stale) << "op\tk";
    std::ofstream(live) << "op\tk";
    fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::minutes(5));
    Tuner tuner(root_);
    EXPECT_FALSE(tuner.winner("dev", "op", "k").has_value());
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(live));
}

TEST_F(TuneTest, ARootThatIsNotTheUsersOwnKeepsWinnersInMemoryWithOneWarning) {
    fs::create_directories(root_);
    Tuner earlier(root_);
    earlier.record(device_id(), "fake_op", four("n=3").full_key(), "c");
    ASSERT_EQ(::chmod(root_.c_str(), 0757), 0);  // writable by others
    ::testing::internal::CaptureStderr();
    Tuner tuner(root_);
    expect_tuned_then_hit(tuner, "n=3");  // the file there is not read
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "kiln: warning:"), 1u) << err;
    EXPECT_NE(err.find("writable by others"), std::string::npos) << err;
    EXPECT_EQ(count_of(read_text(tuner.file_for(device_id())), "\n"), 1u);  // nothing appended
    EXPECT_THROW(tuner.clear(), Error);
}

TEST_F(TuneTest, WithoutARootWinnersStayInMemory) {
    Tuner none{fs::path()};
    expect_tuned_then_hit(none, "n=5");  // in memory
    EXPECT_EQ(none.file_for(device_id()), fs::path());
    EXPECT_FALSE(fs::exists(device_id() + ".tsv"));  // nothing relative to the working directory
    EXPECT_EQ(none.clear(), 0u);
}

TEST_F(TuneTest, ProcessDefaultFollowsKilnCacheDir) {
    const fs::path a = root_ / "a", b = root_ / "b";
    setenv("KILN_CACHE_DIR", a.c_str(), 1);
    Tuner& ta = Tuner::process_default();
    EXPECT_EQ(ta.root(), a / "autotune");
    setenv("KILN_CACHE_DIR", b.c_str(), 1);
    Tuner& tb = Tuner::process_default();
    EXPECT_EQ(tb.root(), b / "autotune");
    EXPECT_NE(&ta, &tb);
    auto t = four("n=2");
    EXPECT_EQ(t.run(), 20);
    EXPECT_TRUE(fs::exists(b / "autotune" / (device_id() + ".tsv")));
    setenv("KILN_CACHE_DIR", a.c_str(), 1);
    EXPECT_EQ(&Tuner::process_default(), &ta);
    unsetenv("KILN_CACHE_DIR");
}

// A device that runs nothing: it counts what time_dispatches asks of it and answers time_ms
// with a fixed sequence of times.
class FakeDevice : public Device {
  public:
    struct Memory : DeviceMemory {
        size_t size;
        explicit Memory(size_t s) : size(s) {}
        size_t bytes() const override { return size; }
        uintptr_t handle() const override { return reinterpret_cast<uintptr_t>(this); }
    };
    FakeDevice(Backend backend, std::string arch, bool simt) {
        info_.backend = backend;
        info_.arch = std::move(arch);
        info_.simt = simt;
        info_.id = "fake";
    }
    const DeviceInfo& info() const override { return info_; }
    std::shared_ptr<DeviceMemory> allocate(size_t bytes) override {
        allocations.push_back(bytes);
        return std::make_shared<Memory>(bytes);
    }
    void write(DeviceMemory&, size_t, const void*, size_t) override {}
    void read(const DeviceMemory&, size_t, void*, size_t) override {}
    void fill(DeviceMemory& dst, const void*, size_t pattern_bytes) override {
        events.push_back('F');
        fill_sizes.push_back({dst.bytes(), pattern_bytes});
    }
    void copy(DeviceMemory&, const DeviceMemory&, size_t) override {}
    std::string toolchain_id() const override { return "fake"; }
    std::string_view source_suffix() const override { return ".fake"; }
    std::vector<uint8_t> compile(const std::string&) override { return {}; }
    std::unique_ptr<Module> load(std::span<const uint8_t>) override { return nullptr; }
    void launch(Module&, const std::string&, int64_t, int, std::span<const KernelArg>) override {}
    void synchronize() override {}
    double time_ms(const std::function<void()>& work) override {
        events.push_back('T');
        work();
        ++timed;
        return static_cast<double>((timed * 7) % 25 + 1);  // 25 calls: a permutation of 1..25
    }

    DeviceInfo info_;
    std::vector<size_t> allocations;
    std::vector<std::pair<size_t, size_t>> fill_sizes;
    std::string events;
    int timed = 0;
};

TEST(TimeDispatches, OneIterationLaunchesOnceWithoutWarmUpOrWaiting) {
    int launches = 0, befores = 0;
    const double ms = time_dispatches(
        cpu_device(), 1, [&] { ++launches; }, [&] { ++befores; });
    EXPECT_EQ(launches, 1);
    EXPECT_EQ(befores, 1);
    EXPECT_EQ(ms, 0);
    FakeDevice gpu(Backend::cuda, "sm_90", true);
    EXPECT_EQ(time_dispatches(gpu, 1, [&] { ++launches; }), 0);
    EXPECT_EQ(launches, 2);
    EXPECT_EQ(gpu.events, "");  // no flush, no warm-up, no timing (which would wait)
}

TEST(TimeDispatches, ManyIterationsWarmUpAndRestoreBeforeEveryLaunch) {
    std::string order;
    const double ms = time_dispatches(
        cpu_device(), 25, [&] { order += 'L'; }, [&] { order += 'B'; });
    ASSERT_EQ(order.size(), 2u * 28u) << order;
    for (size_t i = 0; i < order.size(); i += 2) EXPECT_EQ(order.substr(i, 2), "BL") << i;
    EXPECT_GE(ms, 0);
    int launches = 0;
    time_dispatches(cpu_device(), 25, [&] { ++launches; });  // no before_each
    EXPECT_EQ(launches, 28);
}

TEST(TimeDispatches, WithinABudgetSlowLaunchesRunFourTimesAndFastOnesAllTheirIterations) {
    // The fake's launches take 8, 15, 22, 4, 11, ... ms.
    FakeDevice slow(Backend::cpu, "x86_64", false);
    int launches = 0;
    const double ms = time_dispatches_within(slow, 25, 10, [&] { ++launches; });
    EXPECT_EQ(launches, 4);  // one warm-up (8 ms: past a quarter of 10), three timed
    EXPECT_EQ(ms, 15);       // the median of 15, 22 and 4
    FakeDevice fast(Backend::cpu, "x86_64", false);
    launches = 0;
    time_dispatches_within(fast, 25, 1e6, [&] { ++launches; });
    EXPECT_EQ(launches, 28);  // three warm-ups and every iteration
    FakeDevice middle(Backend::cpu, "x86_64", false);
    launches = 0;
    time_dispatches_within(middle, 25, 100, [&] { ++launches; });
    // Warm-ups of 8 + 15 + 22 ms, then timed 4, 11, 18, 25, 7, 14, 21 ms: 100 spent.
    EXPECT_EQ(launches, 10);
    EXPECT_THROW(time_dispatches_within(fast, 25, 0, [] {}), Error);
    EXPECT_THROW(time_dispatches_within(fast, 25, std::nan(""), [] {}), Error);
}

TEST(TimeDispatches, InTurnsEveryRoundRunsEachLaunchOnceWithinItsOwnBudget) {
    // The fake's runs take 8, 15, 22, 4, 11, 18, 25, 7, ... ms, whichever launch runs.
    std::string order;
    const std::vector<std::function<void()>> launches = {[&] { order += 'a'; },
                                                         [&] { order += 'b'; }};
    FakeDevice roomy(Backend::cpu, "x86_64", false);
    const std::vector<double> all = time_dispatches_in_turns(roomy, 5, 1e6, launches);
    EXPECT_EQ(order,
              "ababab"
              "ababababab");  // three warm-up rounds, five timed
    // Three warm-up rounds, then a timed 25, 14, 3, 17, 6 and b 7, 21, 10, 24, 13.
    EXPECT_EQ(all, (std::vector<double>{14, 13}));
    order.clear();
    FakeDevice tight(Backend::cpu, "x86_64", false);
    const std::vector<double> few = time_dispatches_in_turns(tight, 25, 10, launches);
    // One warm-up each (8 and 15 ms: past a quarter of 10), then three timed each: a 22, 11, 25
    // and b 4, 18, 7.
    EXPECT_EQ(order, "abababab");
    EXPECT_EQ(few, (std::vector<double>{22, 7}));
    EXPECT_THROW(time_dispatches_in_turns(tight, 1, 10, launches), Error);
    EXPECT_THROW(time_dispatches_in_turns(tight, 5, 10, {}), Error);
    EXPECT_THROW(time_dispatches_in_turns(tight, 5, 10, {std::function<void()>{}}), Error);
}

TEST(TimeDispatches, FewerThanOneIterationIsAnError) {
    EXPECT_THROW(time_dispatches(cpu_device(), 0, [] {}), Error);
    EXPECT_THROW(time_dispatches(cpu_device(), -3, [] {}), Error);
}

TEST(TimeDispatches, GpusFlushTheL2BeforeEachTimedLaunchAndReturnTheMedian) {
    FakeDevice gpu(Backend::opencl, "GPU OpenCL 3.0 CUDA", true);
    int launches = 0;
    std::string order;
    const double ms = time_dispatches(
        gpu, 25,
        [&] {
            ++launches;
            order += 'L';
        },
        [&] { order += 'B'; });
    EXPECT_EQ(ms, 13.0);  // the median of 1..25
    EXPECT_EQ(launches, 28);
    EXPECT_EQ(gpu.timed, 25);
    EXPECT_EQ(order.size(), 56u);
    ASSERT_EQ(gpu.allocations, std::vector<size_t>{size_t{256} << 20});
    ASSERT_EQ(gpu.fill_sizes.size(), 25u);
    for (auto [bytes, pattern] : gpu.fill_sizes) {
        EXPECT_EQ(bytes, size_t{256} << 20);
        EXPECT_EQ(pattern, 4u);
    }
    EXPECT_EQ(count_of(gpu.events, "FT"), 25u) << gpu.events;  // each timed launch after a flush
    // The flush buffer is allocated once per device and kept.
    time_dispatches(gpu, 3, [] {});
    EXPECT_EQ(gpu.allocations.size(), 1u);
    EXPECT_EQ(gpu.fill_sizes.size(), 28u);

    FakeDevice cuda(Backend::cuda, "sm_90", true);
    time_dispatches(cuda, 5, [] {});
    EXPECT_EQ(cuda.fill_sizes.size(), 5u);
    FakeDevice pocl(Backend::opencl, "CPU OpenCL 3.0 PoCL", false),
        host(Backend::cpu, "x86_64", false);
    for (FakeDevice* cpu_like : {&pocl, &host}) {
        time_dispatches(*cpu_like, 5, [] {});
        EXPECT_TRUE(cpu_like->allocations.empty()) << cpu_like->info().arch;
        EXPECT_TRUE(cpu_like->fill_sizes.empty()) << cpu_like->info().arch;
    }
}

// y = 3x + 1 with a given block size.
ir::Kernel scale_kernel(int block) {
    KernelBuilder k("tune_scale", block);
    auto x = k.input("x", DType::f32);
    auto y = k.output("y", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = x[i] * 3.0f + 1.0f; });
    return k.finish();
}

TEST(TimeDispatches, TheFlushModeIsWriteOrRead) {
    FakeDevice gpu(Backend::cuda, "sm_90", true);
    setenv("KILN_L2_FLUSH", "sideways", 1);
    try {
        time_dispatches(gpu, 3, [] {});
        ADD_FAILURE() << "an unknown flush mode was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("KILN_L2_FLUSH='sideways'; expected write or read"),
                  std::string::npos)
            << e.what();
    }
    setenv("KILN_L2_FLUSH", "write", 1);
    time_dispatches(gpu, 3, [] {});
    EXPECT_EQ(gpu.fill_sizes.size(), 3u);
    unsetenv("KILN_L2_FLUSH");
}

// The read flush launches a kiln kernel between the timed ones: on a real GPU the timed kernel
// still computes its result and the times are positive.
TEST(TimeDispatches, ReadFlushOnRealGpus) {
    size_t gpus = 0;
    for (Device* d : devices()) {
        if (d->info().backend != Backend::cuda) continue;
        ++gpus;
        const size_t n = 1 << 20;
        std::vector<float> h(n);
        for (size_t j = 0; j < n; ++j) h[j] = static_cast<float>(j % 1000);
        Buffer x(*d, DType::f32, n), y(*d, DType::f32, n);
        x.upload(h);
        auto kernel = compile(*d, scale_kernel(256));
        setenv("KILN_L2_FLUSH", "read", 1);
        const double ms = time_dispatches(*d, 5, [&] { kernel->launch(n / 256, {x, y}); });
        unsetenv("KILN_L2_FLUSH");
        EXPECT_GT(ms, 0.0);
        const auto out = y.download<float>();
        for (size_t j = 0; j < n; ++j) ASSERT_EQ(out[j], h[j] * 3.0f + 1.0f) << j;
    }
    if (gpus == 0) GTEST_SKIP() << "no CUDA device";
}

TEST_F(TuneTest, RealKernelVariantsOnTheCpu) {
    Device& dev = cpu_device();
    const size_t n = 1000;
    std::vector<float> h(n);
    for (size_t j = 0; j < n; ++j) h[j] = 0.25f * static_cast<float>(j);
    Buffer x(dev, DType::f32, n);
    x.upload(h);
    Tuner tuner(root_);
    int launches = 0;
    auto tuned = [&] {
        Tuned<Buffer> t("tune_scale", fmt::format("n={}", n), dev);
        for (int block : {32, 128}) {
            const ir::Kernel ir = scale_kernel(block);
            auto kernel = compile(dev, ir);
            t.variant(
                fmt::format("b{}", block),
                [&, kernel, block](int iters) {
                    Buffer y(dev, DType::f32, n);
                    const int64_t grid = static_cast<int64_t>((n + block - 1) / block);
                    const double ms = time_dispatches(dev, iters, [&] {
                        ++launches;
                        kernel->launch(grid, {x, y});
                    });
                    return Timed<Buffer>{y, ms};
                },
                ir::hex(ir::structural_hash(ir)));
        }
        return t;
    };
    auto check = [&](const Buffer& y) {
        const auto out = y.download<float>();
        for (size_t j = 0; j < n; ++j) ASSERT_EQ(out[j], h[j] * 3.0f + 1.0f) << j;
    };
    auto miss = tuned();
    check(miss.run(tuner));
    EXPECT_EQ(miss.report().benched, 2);
    EXPECT_EQ(launches, 2 * (TUNE_ITERS + 3));
    auto hit = tuned();
    check(hit.run(tuner));
    EXPECT_TRUE(hit.report().hit);
    EXPECT_EQ(hit.report().winner, miss.report().winner);
    EXPECT_EQ(launches, 2 * (TUNE_ITERS + 3) + 1);
}

// x[i] = x[i] * 2 + 1, in place.
ir::Kernel in_place_kernel(int block) {
    KernelBuilder k("tune_in_place", block);
    auto x = k.inout("x", DType::f32);
    Expr i = k.absolute_pos();
    k.if_(i < x.len(), [&] { x[i] = x[i] * 2.0f + 1.0f; });
    return k.finish();
}

TEST_F(TuneTest, VariantsThatWriteTheirInputLeaveTheUsersBufferApplyingTheOpOnce) {
    const size_t n = 777;
    std::vector<float> h(n);
    for (size_t j = 0; j < n; ++j) h[j] = 0.5f * static_cast<float>(j) - 100.0f;
    auto once = [](float v) { return v * 2.0f + 1.0f; };
    for (Device* d : devices()) {
        Device& dev = *d;
        SCOPED_TRACE(dev.info().id);
        Buffer user(dev, DType::f32, n);
        user.upload(h);
        Tuner tuner(root_);
        auto tuned = [&] {
            Tuned<Buffer> t("tune_in_place", fmt::format("n={}", n), dev);
            for (int block : {64, 128}) {
                const ir::Kernel ir = in_place_kernel(block);
                auto kernel = compile(dev, ir);
                const int64_t grid = static_cast<int64_t>((n + block - 1) / block);
                t.variant(
                    fmt::format("b{}", block),
                    [&, kernel, grid](int iters) {
                        if (iters == 1) {
                            const double ms =
                                time_dispatches(dev, 1, [&] { kernel->launch(grid, {user}); });
                            return Timed<Buffer>{user, ms};
                        }
                        Buffer pristine(dev, DType::f32, n), scratch(dev, DType::f32, n);
                        dev.copy(pristine.memory(), user.memory(), user.bytes());
                        const double ms = time_dispatches(
                            dev, iters, [&] { kernel->launch(grid, {scratch}); },
                            [&] { dev.copy(scratch.memory(), pristine.memory(), user.bytes()); });
                        return Timed<Buffer>{scratch, ms};
                    },
                    ir::hex(ir::structural_hash(ir)));
            }
            return t;
        };
        auto apply = [&] {
            auto t = tuned();
            Buffer out = t.run(tuner);
            if (&out.memory() != &user.memory())
                dev.copy(user.memory(), out.memory(), user.bytes());
            dev.synchronize();
            return t.report();
        };
        const TuneReport miss = apply();
        EXPECT_FALSE(miss.hit);
        EXPECT_EQ(miss.benched, 2);
        auto out = user.download<float>();
        for (size_t j = 0; j < n; ++j) ASSERT_EQ(out[j], once(h[j])) << "after a miss, " << j;
        const TuneReport hit = apply();
        EXPECT_TRUE(hit.hit);
        out = user.download<float>();
        for (size_t j = 0; j < n; ++j) ASSERT_EQ(out[j], once(once(h[j]))) << "after a hit, " << j;
    }
}

// The cost model's device facts, kept beside the TSV (<autotune root>/<device id>.facts). Each
// case runs plan::device_facts in a child process (the facts are measured once per process).

// Run by the DeviceFacts tests in a child process, in the directory KILN_FACTS_CHILD_CWD.
TEST(FactsChild, MeasuresOrLoads) {
    const char* cwd = std::getenv("KILN_FACTS_CHILD_CWD");
    if (!cwd) GTEST_SKIP() << "runs only as a child of the DeviceFacts tests";
    fs::current_path(cwd);
    try {
        const plan::DeviceFacts& f = plan::device_facts(cpu_device());
        std::fprintf(stderr, "facts: units %d launch_us %g\n", f.units, f.launch_us);
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        FAIL();
    }
}

class DeviceFactsTest : public TuneTest {
  protected:
    void SetUp() override {
        TuneTest::SetUp();
        fs::create_directories(root_ / "cwd");
    }
    fs::path facts_path() const {
        return root_ / "autotune" / (cache::safe_component(device_id()) + ".facts");
    }
    // Runs FactsChild.MeasuresOrLoads with KILN_CACHE_DIR=root_ (or no cache root at all), killed
    // after `timeout`. Returns its stderr; `ok` tells whether it exited 0 in time.
    std::string run_child(bool with_root, bool& ok,
                          std::chrono::seconds timeout = std::chrono::seconds(120),
                          const std::string& given_facts = "") const {
        const std::string exe = fs::read_symlink("/proc/self/exe").string();
        std::string filter = "--gtest_filter=FactsChild.MeasuresOrLoads";
        std::vector<std::string> env;
        for (char** e = environ; *e; ++e) {
            const std::string_view v(*e);
            if (!v.starts_with("KILN_CACHE_DIR=") && !v.starts_with("XDG_CACHE_HOME=") &&
                !v.starts_with("HOME=") && !v.starts_with("KILN_DEVICE_FACTS="))
                env.emplace_back(v);
        }
        if (with_root) env.push_back("KILN_CACHE_DIR=" + root_.string());
        if (!given_facts.empty()) env.push_back("KILN_DEVICE_FACTS=" + given_facts);
        env.push_back("KILN_FACTS_CHILD_CWD=" + (root_ / "cwd").string());
        std::vector<char*> envp;
        for (auto& s : env) envp.push_back(s.data());
        envp.push_back(nullptr);
        const fs::path err = root_ / "child.err";
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0600);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        std::string arg0 = exe;
        char* argv[] = {arg0.data(), filter.data(), nullptr};
        pid_t pid = 0;
        EXPECT_EQ(posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data()), 0);
        posix_spawn_file_actions_destroy(&actions);
        int status = 0;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                ::kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                ADD_FAILURE() << "the child hung";
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        return read_text(err);
    }
};

TEST_F(DeviceFactsTest, AreWrittenPrivateAndReadBack) {
    bool ok = false;
    run_child(true, ok);
    ASSERT_TRUE(ok);
    struct stat st {};
    ASSERT_EQ(::stat((root_ / "autotune").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    ASSERT_EQ(::lstat(facts_path().c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    // A second process reads them: the file is left as it is.
    const auto before = fs::last_write_time(facts_path());
    run_child(true, ok);
    EXPECT_TRUE(ok);
    EXPECT_EQ(fs::last_write_time(facts_path()), before);
}

// KILN_DEVICE_FACTS gives a backend's facts: nothing is measured or written; other backends'
// entries leave the CPU's alone. A malformed entry is an error naming the variable and the part.
TEST_F(DeviceFactsTest, KilnDeviceFactsGivesThemInsteadOfAMeasurement) {
    bool ok = false;
    std::string err = run_child(true, ok, std::chrono::seconds(120),
                                "opencl:bandwidth=1,launch_us=9,flops=1,units=3;"
                                "cpu:bandwidth=3e4,launch_us=0.25,flops=2e5,units=7");
    EXPECT_TRUE(ok) << err;
    EXPECT_THAT(err, HasSubstr("facts: units 7 launch_us 0.25"));
    EXPECT_FALSE(fs::exists(facts_path()));
    for (const auto& [given, named] : std::vector<std::pair<std::string, std::string>>{
             {"cpu:bandwidth=3e4,launch_us=0.25,flops=2e5", "no units="},
             {"cpu:bandwidth=3e4,launch_us=0.25,flops=2e5,units=2.5", "whole units"},
             {"cpu:bandwidth=-1,launch_us=0.25,flops=2e5,units=2", "'-1'"},
             {"cpu:bandwidth=3e4,launch=0.25,flops=2e5,units=2", "'launch=0.25'"},
             {"gpu:bandwidth=3e4,launch_us=0.25,flops=2e5,units=2", "unknown backend 'gpu'"},
             {"bandwidth=3e4", "names no backend"}}) {
        err = run_child(true, ok, std::chrono::seconds(60), given);
        EXPECT_FALSE(ok) << given;
        EXPECT_THAT(err, HasSubstr("KILN_DEVICE_FACTS is '" + given + "'"));
        EXPECT_THAT(err, HasSubstr(named));
    }
    EXPECT_FALSE(fs::exists(facts_path()));
}

TEST_F(DeviceFactsTest, AFifoInTheirPlaceNeitherHangsNorIsReplaced) {
    fs::create_directories(root_ / "autotune");
    fs::permissions(root_ / "autotune", fs::perms::owner_all, fs::perm_options::replace);
    ASSERT_EQ(::mkfifo(facts_path().c_str(), 0600), 0);
    bool ok = false;
    const std::string err = run_child(true, ok, std::chrono::seconds(60));
    EXPECT_TRUE(ok) << err;
    EXPECT_EQ(count_of(err, "kiln: warning:"), 1u) << err;
    EXPECT_THAT(err, HasSubstr(facts_path().string() + " is a FIFO"));
    struct stat st {};
    ASSERT_EQ(::lstat(facts_path().c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(DeviceFactsTest, WithoutACacheRootNothingIsWrittenToTheWorkingDirectory) {
    bool ok = false;
    const std::string err = run_child(false, ok);
    EXPECT_TRUE(ok) << err;
    EXPECT_THAT(err, HasSubstr("no cache directory"));
    EXPECT_TRUE(fs::is_empty(root_ / "cwd")) << "files written in the working directory";
}

TEST_F(DeviceFactsTest, AnAutotuneDirectoryWritableByOthersIsNeitherReadNorWritten) {
    fs::create_directories(root_ / "autotune");
    const std::string planted = "bandwidth 1\nlaunch_us 1\nflops 1\ngpu 0\nunits 4321\n";
    for (const std::string head : {"", "# kiln facts\n"}) {
        std::ofstream(facts_path()) << head << planted;
        ASSERT_EQ(::chmod((root_ / "autotune").c_str(), 0777), 0);
        bool ok = false;
        const std::string err = run_child(true, ok);
        EXPECT_TRUE(ok) << err;
        EXPECT_THAT(err, HasSubstr("writable by others"));
        EXPECT_THAT(err, Not(HasSubstr("units 4321"))) << "a planted file was read";
        EXPECT_EQ(read_text(facts_path()), head + planted) << "it was rewritten";
    }
}

TEST_F(DeviceFactsTest, ClearRemovesThemButNotAUsersFileOfTheirName) {
    bool ok = false;
    run_child(true, ok);
    ASSERT_TRUE(ok);
    ASSERT_TRUE(fs::exists(facts_path()));
    Tuner tuner(root_ / "autotune");
    std::vector<fs::path> left;
    EXPECT_EQ(tuner.clear("", &left), 1u);
    EXPECT_TRUE(left.empty()) << left.front();
    EXPECT_FALSE(fs::exists(facts_path()));
    std::ofstream(facts_path()) << "my own notes\n";
    EXPECT_EQ(tuner.clear(device_id(), &left), 0u);
    EXPECT_EQ(left, std::vector<fs::path>{facts_path()});
    EXPECT_EQ(read_text(facts_path()), "my own notes\n");
}

}  // namespace
