// The CPU backend's thread pool: a fixed set of workers created once, running one parallel job
// at a time (tasks 0..count-1), with the calling thread joining in until the job is done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime::cpu {

class ThreadPool {
  public:
    // `threads` counts the caller: a pool of N starts N - 1 workers.
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // Runs task(i) for every i in [0, count) and returns when all have finished. Calls from
    // several threads are serialized. `task` must not throw.
    void run(int64_t count, const std::function<void(int64_t)>& task);

  private:
    struct Job;
    void worker_loop();
    static void work_on(Job& job);

    std::mutex run_mutex_;  // one job at a time
    std::mutex mutex_;      // guards job_, generation_, stop_
    std::condition_variable wake_;
    std::condition_variable done_;
    std::shared_ptr<Job> job_;
    uint64_t generation_ = 0;
    bool stop_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace kiln::runtime::cpu
