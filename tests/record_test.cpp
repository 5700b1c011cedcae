// Device::record: a replay enqueues the recorded launches, fills and copies again, on every
// device; on CUDA (a graph) recording runs nothing, and what a graph cannot hold is a
// kiln::Error that leaves the device usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "kiln/compile.hpp"
#include "kiln/dsl.hpp"
#include "support/errors.hpp"

using namespace kiln;
using kiln::test::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

constexpr size_t kCount = 1000;  // several blocks, a ragged last one

// y[i] += x[i]
ir::Kernel accumulate() {
    KernelBuilder k("accumulate", 64);
    auto x = k.input("x", DType::f32);
    auto y = k.inout("y", DType::f32);
    k.require(x.len() == y.len(), "x and y have the same length");
    Expr i = k.absolute_pos();
    k.if_(i < y.len(), [&] { y[i] = y[i] + x[i]; });
    return k.finish();
}

int64_t grid_for(size_t count) {
    return static_cast<int64_t>((count + 63) / 64);
}

std::vector<Device*> cuda_devices() {
    std::vector<Device*> out;
    for (Device* d : devices())
        if (d->info().backend == Backend::cuda) out.push_back(d);
    return out;
}

// The buffers and kernel a recording works on, allocated before it.
struct Work {
    explicit Work(Device& d)
        : kernel(compile(d, accumulate())),
          x(d, DType::f32, kCount),
          y(d, DType::f32, kCount),
          snapshot(d, DType::f32, kCount) {
        x.fill(1.0);
        y.fill(0.0);
        snapshot.fill(-1.0);
    }
    // Sets x to 3, adds it to y twice, copies y to the snapshot.
    void enqueue(Device& d) {
        x.fill(3.0);
        kernel->launch(grid_for(kCount), {x, y});
        kernel->launch(grid_for(kCount), {x, y});
        d.copy(snapshot.memory(), y.memory(), y.bytes());
    }
    std::shared_ptr<CompiledKernel> kernel;
    Buffer x, y, snapshot;
};

void expect_all(const Buffer& b, float value) {
    const std::vector<float> v = b.download<float>();
    EXPECT_EQ(v.front(), value);
    EXPECT_EQ(v.back(), value);
    EXPECT_EQ(std::count(v.begin(), v.end(), value), static_cast<long>(v.size()));
}

TEST(Record, EachReplayRunsTheRecordedWorkAgain) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        Work w(*d);
        auto recording = d->record([&] { w.enqueue(*d); });
        // Nothing ran while recording.
        expect_all(w.x, 1.0f);
        expect_all(w.y, 0.0f);
        expect_all(w.snapshot, -1.0f);
        recording->replay();
        d->synchronize();
        expect_all(w.x, 3.0f);
        expect_all(w.y, 6.0f);
        expect_all(w.snapshot, 6.0f);
        recording->replay();
        recording->replay();
        expect_all(w.y, 18.0f);
        expect_all(w.snapshot, 18.0f);
        // Work queued after a replay runs after it.
        w.kernel->launch(grid_for(kCount), {w.x, w.y});
        expect_all(w.y, 21.0f);
    }
}

TEST(Record, NoWorkIsAnError) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        EXPECT_THAT(error_of([&] { d->record(nullptr); }), HasSubstr("no work given"));
    }
}

TEST(Record, AnEmptyRecordingReplaysNothing) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        auto recording = d->record([] {});
        recording->replay();
        d->synchronize();
    }
}

// The work `bad` does inside a CUDA recording fails it with a message naming `what`; the
// device still launches, and a later recording works.
void expect_refused(Device& d, const std::function<void(Work&)>& bad,
                    const ::testing::Matcher<std::string>& message) {
    Work w(d);
    EXPECT_THAT(error_of([&] { d.record([&] { bad(w); }); }), message);
    w.kernel->launch(grid_for(kCount), {w.x, w.y});
    expect_all(w.y, 1.0f);
    auto recording = d.record([&] { w.enqueue(d); });
    recording->replay();
    expect_all(w.y, 7.0f);
}

TEST(Record, OnCudaOnlyLaunchesFillsAndCopiesMayBeRecorded) {
    if (cuda_devices().empty()) GTEST_SKIP() << "no CUDA device";
    for (Device* d : cuda_devices()) {
        SCOPED_TRACE(d->info().id);
        const auto refused = [](const char* what) {
            return AllOf(HasSubstr(what), HasSubstr("while recording"),
                         HasSubstr("only launches, fills and copies"));
        };
        expect_refused(
            *d, [&](Work&) { Buffer extra(*d, DType::f32, 4); }, refused("allocate"));
        expect_refused(
            *d, [&](Work& w) { w.y.download<float>(); }, refused("read"));
        expect_refused(
            *d, [&](Work& w) { w.y.upload(std::vector<float>(kCount, 2.0f)); }, refused("write"));
        expect_refused(
            *d, [&](Work&) { d->synchronize(); }, refused("synchronize"));
        expect_refused(
            *d, [&](Work&) { d->time_ms([] {}); }, refused("time_ms"));
        expect_refused(
            *d, [&](Work&) { d->record([] {}); }, refused("record"));
    }
}

TEST(Record, OnCudaFreeingMemoryWhileRecordingFailsTheRecording) {
    if (cuda_devices().empty()) GTEST_SKIP() << "no CUDA device";
    for (Device* d : cuda_devices()) {
        SCOPED_TRACE(d->info().id);
        Work w(*d);
        auto doomed = std::make_unique<Buffer>(*d, DType::f32, kCount);
        doomed->fill(5.0);
        EXPECT_THAT(error_of([&] {
                        d->record([&] {
                            w.kernel->launch(grid_for(kCount), {*doomed, w.y});
                            doomed.reset();
                        });
                    }),
                    AllOf(HasSubstr("freed 1 buffer"), HasSubstr("outlive the recording")));
        expect_all(w.y, 0.0f);  // the refused recording never ran
    }
}

TEST(Record, OnCudaWorkThatThrowsEndsTheRecording) {
    if (cuda_devices().empty()) GTEST_SKIP() << "no CUDA device";
    for (Device* d : cuda_devices()) {
        SCOPED_TRACE(d->info().id);
        expect_refused(
            *d,
            [&](Work& w) {
                w.kernel->launch(grid_for(kCount), {w.x, w.y});
                fail("the caller's own failure");
            },
            HasSubstr("the caller's own failure"));
    }
}

TEST(Record, OnCudaAnotherThreadCannotEnqueueWhileRecording) {
    if (cuda_devices().empty()) GTEST_SKIP() << "no CUDA device";
    for (Device* d : cuda_devices()) {
        SCOPED_TRACE(d->info().id);
        Work w(*d);
        std::string other;
        auto recording = d->record([&] {
            std::thread t([&] {
                other = error_of([&] { w.kernel->launch(grid_for(kCount), {w.x, w.y}); });
            });
            t.join();
            w.enqueue(*d);
        });
        EXPECT_THAT(other, AllOf(HasSubstr("launch"), HasSubstr("another thread is recording")));
        recording->replay();
        expect_all(w.y, 6.0f);
    }
}

}  // namespace
