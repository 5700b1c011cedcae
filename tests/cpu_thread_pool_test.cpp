// Tests of the CPU backend's threading: the thread pool (every task once, back-to-back jobs, the
// sleeping and the spinning hand-off, a caller asleep until its workers leave) and the thread count
// (the affinity mask, KILN_NUM_THREADS).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "kiln/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/cpu/host_info.hpp"
#include "runtime/cpu/thread_pool.hpp"
#include "runtime/discover.hpp"
#include "support/scoped_env.hpp"

namespace kiln::runtime::cpu {
namespace {

using ::testing::HasSubstr;

// Runs `jobs` jobs of ragged task counts back to back and checks each task ran exactly once.
void expect_each_task_once(ThreadPool& pool, int jobs) {
    for (int j = 0; j < jobs; ++j) {
        const int64_t count = 1 + (j * 7) % 37;
        std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
        pool.run(count, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
        for (int64_t i = 0; i < count; ++i)
            ASSERT_EQ(runs[static_cast<size_t>(i)].load(), 1) << "job " << j << " task " << i;
    }
}

TEST(CpuThreadPool, EveryTaskOnceWhetherWorkersSpinOrSleep) {
    for (auto spin : {std::chrono::microseconds(0), std::chrono::microseconds(200)}) {
        ThreadPool pool(4, spin);
        EXPECT_EQ(pool.size(), 4);
        expect_each_task_once(pool, 300);
        // Workers gone to sleep (no spin left) are woken by the next job.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        expect_each_task_once(pool, 3);
    }
}

TEST(CpuThreadPool, ACallerAsleepIsWokenWhenTheLastWorkerLeaves) {
    // No spinning: the caller, done with its share, sleeps until the worker running the slow
    // task leaves the job, and must see that task's write when it returns (a hang is the
    // failure too).
    ThreadPool pool(2, std::chrono::microseconds(0));
    const std::thread::id caller = std::this_thread::get_id();
    for (int attempt = 0; attempt < 20; ++attempt) {
        std::vector<int> slow_wrote(2, 0);  // plain ints: run() must order the writes before it
        std::atomic<bool> on_worker{false};
        pool.run(2, [&](int64_t i) {
            if (std::this_thread::get_id() == caller) {  // time for the worker to wake
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                return;
            }
            on_worker.store(true);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            slow_wrote[static_cast<size_t>(i)] = 1;
        });
        if (!on_worker.load()) continue;  // the caller took both tasks before the worker woke
        EXPECT_EQ(slow_wrote[0] + slow_wrote[1], 1);
        return;
    }
    ADD_FAILURE() << "the worker took no task in 20 jobs";
}

TEST(CpuThreadPool, DestroyedBeforeItsWorkersStartIsNoHang) {
    // A pool made and dropped at once: its workers may start after the destructor asked them to
    // stop, and must still see that (a hang here is the failure).
    for (int i = 0; i < 200; ++i) ThreadPool pool(3, std::chrono::microseconds(i % 2 ? 0 : 50));
}

TEST(CpuThreadPool, WorkersTakeTasks) {
    ThreadPool pool(3);
    std::atomic<int> others{0};
    const std::thread::id caller = std::this_thread::get_id();
    // Tasks that wait a little, so the caller alone cannot take them all before a worker wakes.
    for (int attempt = 0; attempt < 20 && others.load() == 0; ++attempt)
        pool.run(16, [&](int64_t) {
            if (std::this_thread::get_id() != caller) others.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        });
    EXPECT_GT(others.load(), 0) << "no task ran on a worker";
}

TEST(CpuThreadPool, EachThreadTakesItsOwnShareFirst) {
    // Two threads, eight tasks: the caller's share is 0-3, the worker's 4-7. Tasks take 2 ms, so
    // neither reaches the other's share before taking its own first task.
    ThreadPool pool(2);
    const std::thread::id caller = std::this_thread::get_id();
    for (int attempt = 0; attempt < 20; ++attempt) {
        std::vector<std::thread::id> ran(8);
        pool.run(8, [&](int64_t i) {
            ran[static_cast<size_t>(i)] = std::this_thread::get_id();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        });
        if (std::count(ran.begin(), ran.end(), caller) == 8) continue;  // the worker was late
        EXPECT_EQ(ran[0], caller);
        EXPECT_NE(ran[4], caller);
        return;
    }
    ADD_FAILURE() << "the worker took no task in 20 jobs";
}

TEST(CpuThreadPool, CallsFromSeveralThreadsAreSerialized) {
    ThreadPool pool(2);
    std::vector<std::thread> callers;
    std::atomic<int> failures{0};
    for (int t = 0; t < 3; ++t)
        callers.emplace_back([&] {
            for (int j = 0; j < 100; ++j) {
                std::atomic<int64_t> sum{0};
                pool.run(9, [&](int64_t i) { sum.fetch_add(i + 1); });
                if (sum.load() != 45) failures.fetch_add(1);
            }
        });
    for (auto& c : callers) c.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(CpuThreadCount, DefaultFollowsTheAffinityMask) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
    EXPECT_EQ(usable_cpus(), CPU_COUNT(&mask));
    // A thread limited to one CPU (as a container or `taskset -c 0` would) makes a pool of one.
    int first = 0;
    while (!CPU_ISSET(first, &mask)) ++first;
    int seen = 0, units = 0;
    std::thread limited([&] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        if (::sched_setaffinity(0, sizeof one, &one) != 0) return;
        seen = usable_cpus();
        CpuDeviceOptions options;
        options.compiler = "/nonexistent/kiln-cxx";  // no compiler probe needed
        units = CpuDevice(options).info().compute_units;
    });
    limited.join();
    EXPECT_EQ(seen, 1);
    EXPECT_EQ(units, 1);
}

TEST(CpuThreadCount, KilnNumThreadsSetsThePool) {
    test::ScopedEnv cxx("KILN_CXX", "/nonexistent/kiln-cxx");
    {
        test::ScopedEnv threads("KILN_NUM_THREADS", "3");
        EXPECT_EQ(options_from_environment().threads, 3);
        std::string reason;
        auto found = discover_cpu(&reason);
        ASSERT_EQ(found.size(), 1u) << reason;
        EXPECT_EQ(found[0]->info().compute_units, 3);
    }
    {
        test::ScopedEnv threads("KILN_NUM_THREADS", "2");
        test::ScopedEnv older("KILN_CPU_THREADS", "2");  // the older name, agreeing
        EXPECT_EQ(options_from_environment().threads, 2);
    }
    {
        test::ScopedEnv older("KILN_CPU_THREADS", "5");
        EXPECT_EQ(options_from_environment().threads, 5);
    }
    EXPECT_EQ(options_from_environment().threads, 0);  // unset: the affinity mask's count
}

TEST(CpuThreadCount, BadKilnNumThreadsIsAnErrorNamingTheValue) {
    for (const char* bad : {"many", "0", "-2", "3x", "4097", "99999999999999999999"}) {
        test::ScopedEnv threads("KILN_NUM_THREADS", bad);
        try {
            (void)options_from_environment();
            ADD_FAILURE() << "no error for KILN_NUM_THREADS=" << bad;
        } catch (const Error& e) {
            EXPECT_THAT(e.what(), HasSubstr(std::string("KILN_NUM_THREADS='") + bad + "'"));
            EXPECT_THAT(e.what(), HasSubstr("expected an integer from 1 to 4096"));
        }
        std::string reason;
        EXPECT_TRUE(discover_cpu(&reason).empty());
        EXPECT_THAT(reason, HasSubstr(bad));
    }
    test::ScopedEnv threads("KILN_NUM_THREADS", "2");
    test::ScopedEnv older("KILN_CPU_THREADS", "4");
    try {
        (void)options_from_environment();
        ADD_FAILURE() << "no error for disagreeing thread counts";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("KILN_NUM_THREADS=2 and KILN_CPU_THREADS=4 disagree"));
    }
}

}  // namespace
}  // namespace kiln::runtime::cpu
