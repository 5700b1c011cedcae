// ThreadPool: workers wait for a job (spinning, then asleep on a futex), claim task indices from
// their own share of the job and then from the others', and the last task to finish tells the
// caller.
#include "runtime/cpu/thread_pool.hpp"

namespace kiln::runtime::cpu {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// Polls `ready` for about `spin`; true as soon as it holds, false when the time is up.
template <typename Ready>
bool spin_until(std::chrono::microseconds spin, const Ready& ready) {
    if (spin.count() <= 0) return ready();
    const auto until = std::chrono::steady_clock::now() + spin;
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (ready()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= until) return ready();
    }
}

}  // namespace

// The tasks are dealt into one contiguous share per participant (the caller 0, worker w w + 1),
// each with its own cursor: a participant takes its own share first and then helps with the
// others'. So launch after launch of one kernel, each thread gets the same part of the grid
// again, whose data its own cache still holds; a thread the scheduler put aside loses its share
// to the others instead of holding up the job.
struct ThreadPool::Job {
    struct alignas(64) Share {
        std::atomic<int64_t> next{0};
        int64_t end = 0;
    };
    const std::function<void(int64_t)>* task = nullptr;
    std::vector<Share> shares;
    // On a line of their own: the participants write them, and read `task` and `shares` above.
    alignas(64) std::atomic<int64_t> remaining{0};
    std::atomic<uint32_t> done{0};  // set (and notified) by whoever finishes the last task

    Job(const std::function<void(int64_t)>& t, int64_t count, int participants)
        : task(&t), shares(static_cast<size_t>(participants)), remaining(count) {
        const int64_t base = count / participants, extra = count % participants;
        int64_t begin = 0;
        for (int64_t p = 0; p < participants; ++p) {
            shares[size_t(p)].next.store(begin, std::memory_order_relaxed);
            begin += base + (p < extra ? 1 : 0);
            shares[size_t(p)].end = begin;
        }
    }
};

ThreadPool::ThreadPool(int threads, std::chrono::microseconds spin) : spin_(spin) {
    // Workers start from generation 0, the pool's own: one that starts late still sees every
    // change after it, the destructor's included.
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (std::thread& w : workers_) w.join();
}

// Claims and runs tasks until none are left: participant `me`'s share first, then the others'.
// The tasks it ran are taken off `remaining` once, at the end (one write of that shared line per
// participant rather than per task); whoever takes it to 0 finished the job. A worker that
// arrives after the job is finished finds every share taken and touches nothing else, so the
// caller's task may be gone by then.
void ThreadPool::work_on(Job& job, int me) {
    const int n = static_cast<int>(job.shares.size());
    int64_t ran = 0;
    for (int k = 0; k < n; ++k) {
        Job::Share& share = job.shares[size_t((me + k) % n)];
        for (;;) {
            if (share.next.load(std::memory_order_relaxed) >= share.end) break;
            const int64_t i = share.next.fetch_add(1, std::memory_order_relaxed);
            if (i >= share.end) break;
            (*job.task)(i);
            ++ran;
        }
    }
    if (ran > 0 && job.remaining.fetch_sub(ran, std::memory_order_acq_rel) == ran) {
        job.done.store(1, std::memory_order_release);
        job.done.notify_all();
    }
}

void ThreadPool::worker_loop(int me) {
    uint32_t seen = 0;
    for (;;) {
        if (!spin_until(spin_, [&] { return generation_.load(std::memory_order_acquire) != seen; }))
            generation_.wait(seen);
        const uint32_t now = generation_.load();
        if (now == seen) continue;  // woken without a new job
        seen = now;
        if (stop_.load()) return;
        if (std::shared_ptr<Job> job = job_.load()) work_on(*job, me);
    }
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t)>& task) {
    if (count <= 0) return;
    std::lock_guard serial(run_mutex_);
    if (workers_.empty() || count == 1) {
        for (int64_t i = 0; i < count; ++i) task(i);
        return;
    }
    auto job = std::make_shared<Job>(task, count, size());
    job_.store(job);
    generation_.fetch_add(1);
    generation_.notify_all();  // a system call only where a worker sleeps
    work_on(*job, 0);
    if (!spin_until(spin_, [&] { return job->done.load(std::memory_order_acquire) != 0; }))
        while (job->done.load(std::memory_order_acquire) == 0) job->done.wait(0);
    job_.store(nullptr);
}

}  // namespace kiln::runtime::cpu
