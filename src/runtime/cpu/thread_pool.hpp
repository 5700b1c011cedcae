// The CPU backend's thread pool: a fixed set of workers created once, running one parallel job
// at a time (tasks 0..count-1), with the calling thread joining in until the job is done.
// Between jobs a worker spins a short while before it sleeps, so launches that follow each other
// closely (a graph's replay, a timing loop) find it awake instead of paying a futex wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime::cpu {

class ThreadPool {
  public:
    // `threads` counts the caller: a pool of N starts N - 1 workers. `spin` is how long a worker
    // (and a caller waiting for the job's last tasks) polls before it sleeps.
    explicit ThreadPool(int threads,
                        std::chrono::microseconds spin = std::chrono::microseconds(200));
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // Runs task(i) for every i in [0, count) and returns when all have finished; participant p
    // of size() takes the p-th contiguous share of [0, count) first. Calls from several threads
    // are serialized. `task` must not throw.
    void run(int64_t count, const std::function<void(int64_t)>& task);

  private:
    using Task = std::function<void(int64_t)>;
    // What participant p owns, on a cache line of its own: its share of the job's tasks (the
    // cursor the others also take from once theirs is done) and, for a worker, whether it is
    // inside a job.
    struct alignas(64) Participant {
        std::atomic<int64_t> next{0};
        int64_t end = 0;
        std::atomic<uint32_t> inside{0};
    };
    void worker_loop(int me);
    void work_on(const Task& task, int me);
    bool workers_outside() const;

    std::chrono::microseconds spin_;
    std::mutex run_mutex_;  // one job at a time
    std::vector<Participant> participants_;
    // The job's task while its tasks are being handed out; null between jobs.
    alignas(64) std::atomic<const Task*> task_{nullptr};
    std::atomic<uint32_t> generation_{0};  // futex word the sleeping workers wait on
    std::atomic<bool> stop_{false};
    // For a caller gone to sleep waiting for workers to leave a job: whether it sleeps, and the
    // futex word it sleeps on.
    alignas(64) std::atomic<uint32_t> caller_asleep_{0};
    std::atomic<uint32_t> left_{0};
    std::vector<std::thread> workers_;
};

}  // namespace kiln::runtime::cpu
