// The CPU backend's thread pool: a fixed set of workers created once, running one parallel job
// at a time (tasks 0..count-1), with the calling thread joining in until the job is done.
// Between jobs a worker spins a short while before it sleeps, so launches that follow each other
// closely (a graph's replay, a timing loop) find it awake instead of paying a futex wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
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
    struct Job;
    void worker_loop(int me);
    static void work_on(Job& job, int me);

    std::chrono::microseconds spin_;
    std::mutex run_mutex_;  // one job at a time
    // The job, published with a new generation; a worker holds it through a shared_ptr, so one
    // the scheduler put aside can arrive after the caller returned and touch only what it holds.
    std::atomic<std::shared_ptr<Job>> job_;
    std::atomic<uint32_t> generation_{0};  // futex word the sleeping workers wait on
    std::atomic<bool> stop_{false};
    std::vector<std::thread> workers_;
};

}  // namespace kiln::runtime::cpu
