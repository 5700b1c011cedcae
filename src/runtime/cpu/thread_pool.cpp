// ThreadPool: workers wait for a job (spinning, then asleep on a futex), claim task indices from
// an atomic counter, and the last task to finish tells the caller.
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

struct ThreadPool::Job {
    const std::function<void(int64_t)>* task = nullptr;
    int64_t count = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> remaining{0};
    std::atomic<uint32_t> done{0};  // set (and notified) by whoever finishes the last task
};

ThreadPool::ThreadPool(int threads, std::chrono::microseconds spin) : spin_(spin) {
    // Workers start from generation 0, the pool's own: one that starts late still sees every
    // change after it, the destructor's included.
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (std::thread& w : workers_) w.join();
}

// Claims and runs tasks until none are left. A worker that arrives after the job is finished
// claims an index >= count and touches nothing else, so the caller's task may be gone by then.
void ThreadPool::work_on(Job& job) {
    for (;;) {
        int64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= job.count) return;
        (*job.task)(i);
        if (job.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            job.done.store(1, std::memory_order_release);
            job.done.notify_all();
        }
    }
}

void ThreadPool::worker_loop() {
    uint32_t seen = 0;
    for (;;) {
        if (!spin_until(spin_, [&] { return generation_.load(std::memory_order_acquire) != seen; }))
            generation_.wait(seen);
        const uint32_t now = generation_.load();
        if (now == seen) continue;  // woken without a new job
        seen = now;
        if (stop_.load()) return;
        if (std::shared_ptr<Job> job = job_.load()) work_on(*job);
    }
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t)>& task) {
    if (count <= 0) return;
    std::lock_guard serial(run_mutex_);
    if (workers_.empty() || count == 1) {
        for (int64_t i = 0; i < count; ++i) task(i);
        return;
    }
    auto job = std::make_shared<Job>();
    job->task = &task;
    job->count = count;
    job->remaining.store(count, std::memory_order_relaxed);
    job_.store(job);
    generation_.fetch_add(1);
    generation_.notify_all();  // a system call only where a worker sleeps
    work_on(*job);
    if (!spin_until(spin_, [&] { return job->done.load(std::memory_order_acquire) != 0; }))
        while (job->done.load(std::memory_order_acquire) == 0) job->done.wait(0);
    job_.store(nullptr);
}

}  // namespace kiln::runtime::cpu
