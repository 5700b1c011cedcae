// ThreadPool: workers wait for a job (spinning, then asleep on a futex), claim task indices from
// their own share of the job and then from the others', and the caller returns once every task
// is claimed and no worker is inside the job.
#include "runtime/cpu/thread_pool.hpp"

#include <algorithm>

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

ThreadPool::ThreadPool(int threads, std::chrono::microseconds spin)
    : spin_(spin), participants_(static_cast<size_t>(std::max(threads, 1))) {
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
// So launch after launch of one kernel, each thread gets the same part of the grid again, whose
// data its own cache still holds; a thread the scheduler put aside loses its share to the others
// instead of holding up the job.
void ThreadPool::work_on(const Task& task, int me) {
    const int n = static_cast<int>(participants_.size());
    for (int k = 0; k < n; ++k) {
        Participant& share = participants_[size_t((me + k) % n)];
        for (;;) {
            if (share.next.load(std::memory_order_relaxed) >= share.end) break;
            const int64_t i = share.next.fetch_add(1, std::memory_order_relaxed);
            if (i >= share.end) break;
            task(i);
        }
    }
}

// A worker marks itself inside before it reads the job's task and outside once its tasks are
// done (each on its own line: no line all the workers write). The caller clears the task once
// every task is claimed and then waits for every worker to be outside: with both orders
// sequentially consistent, a worker either read the task before it was cleared, and the caller
// sees it inside, or reads it cleared and touches nothing. A worker the scheduler put aside
// before it marked itself inside holds nobody up.
void ThreadPool::worker_loop(int me) {
    Participant& self = participants_[size_t(me)];
    uint32_t seen = 0;
    for (;;) {
        if (!spin_until(spin_, [&] { return generation_.load(std::memory_order_acquire) != seen; }))
            generation_.wait(seen);
        const uint32_t now = generation_.load();
        if (now == seen) continue;  // woken without a new job
        seen = now;
        if (stop_.load()) return;
        self.inside.store(1);
        if (const Task* task = task_.load()) work_on(*task, me);
        self.inside.store(0);
        if (caller_asleep_.load()) {
            left_.fetch_add(1);
            left_.notify_all();
        }
    }
}

bool ThreadPool::workers_outside() const {
    for (size_t w = 1; w < participants_.size(); ++w)
        if (participants_[w].inside.load() != 0) return false;
    return true;
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t)>& task) {
    if (count <= 0) return;
    std::lock_guard serial(run_mutex_);
    if (workers_.empty() || count == 1) {
        for (int64_t i = 0; i < count; ++i) task(i);
        return;
    }
    // The tasks dealt into one contiguous share per participant (the caller 0, worker w w + 1).
    const int64_t n = static_cast<int64_t>(participants_.size());
    const int64_t base = count / n, extra = count % n;
    int64_t begin = 0;
    for (int64_t p = 0; p < n; ++p) {
        Participant& share = participants_[size_t(p)];
        share.next.store(begin, std::memory_order_relaxed);
        begin += base + (p < extra ? 1 : 0);
        share.end = begin;
    }
    task_.store(&task);
    generation_.fetch_add(1);
    generation_.notify_all();  // a system call only where a worker sleeps
    work_on(task, 0);
    task_.store(nullptr);  // every task is claimed: a worker arriving now has nothing to do
    if (spin_until(spin_, [&] { return workers_outside(); })) return;
    for (;;) {
        const uint32_t left = left_.load();
        caller_asleep_.store(1);
        if (workers_outside()) break;
        left_.wait(left);
    }
    caller_asleep_.store(0);
}

}  // namespace kiln::runtime::cpu
