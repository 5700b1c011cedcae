// ThreadPool: workers wait for a job, claim task indices from an atomic counter, and the last
// task to finish wakes the caller.
#include "runtime/cpu/thread_pool.hpp"

#include <atomic>

namespace kiln::runtime::cpu {

struct ThreadPool::Job {
    const std::function<void(int64_t)>* task = nullptr;
    int64_t count = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> remaining{0};
    ThreadPool* pool = nullptr;
};

ThreadPool::ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
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
            std::lock_guard lock(job.pool->mutex_);
            job.pool->done_.notify_all();
        }
    }
}

void ThreadPool::worker_loop() {
    uint64_t seen = 0;
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            job = job_;
        }
        if (job) work_on(*job);
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
    job->remaining.store(count);
    job->pool = this;
    {
        std::lock_guard lock(mutex_);
        job_ = job;
        ++generation_;
    }
    wake_.notify_all();
    work_on(*job);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return job->remaining.load(std::memory_order_acquire) == 0; });
    job_.reset();
}

}  // namespace kiln::runtime::cpu
