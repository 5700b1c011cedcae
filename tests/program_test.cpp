// kiln::compile: a program's calls, traced and replayed, give the bits of its function run op by
// op on every device; the trace plans across the function's resolves; signatures trace again
// within a bound; bad input and a failing trace are errors that leave nothing behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/program.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"
#include "support/scoped_env.hpp"

namespace kiln {
namespace {

using test::expect_error_naming;
using ::testing::HasSubstr;

// Bitwise equality of two tensors' data.
void expect_same_bits(const Tensor& got, const Tensor& want) {
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.dtype(), want.dtype());
    EXPECT_TRUE(
        test::identical({got.dtype(), got.to_host_bytes()}, {want.dtype(), want.to_host_bytes()}));
}

// An MLP block with a residual, a resolve in the middle (as a model resolves each layer), and a
// second output that reads an intermediate the first also reads.
std::vector<Tensor> mlp(const std::vector<Tensor>& in, const Tensor& w1, const Tensor& b1,
                        const Tensor& w2) {
    Tensor h = gelu(linear(in[0], w1, &b1));
    h.resolve();
    const Tensor y = linear(h, w2) + in[0];
    return {y, sum(h * in[1], {1})};
}

// Every way of replaying (KILN_REPLAY): measured (on CUDA the first replay direct, the second
// recorded, then the faster), direct, recorded.
const char* const kReplayModes[] = {"measure", "direct", "recorded"};

TEST(Program, CallsGiveTheBitsOfTheFunctionRunOpByOpOnEveryDevice) {
    for (Device* d : devices())
        for (const char* mode : kReplayModes) {
            SCOPED_TRACE(d->info().id + " " + mode);
            const test::ScopedEnv replay("KILN_REPLAY", mode);
            const Tensor w1 = test::random_tensor(*d, DType::f32, {13, 7}, 1) * 0.25;
            const Tensor b1 = test::random_tensor(*d, DType::f32, {13}, 2);
            const Tensor w2 = test::random_tensor(*d, DType::f32, {7, 13}, 3) * 0.25;
            Program p = compile([&](const std::vector<Tensor>& in) { return mlp(in, w1, b1, w2); });
            std::vector<Tensor> earlier;
            for (uint64_t seed : {10, 20, 30, 40}) {
                const std::vector<Tensor> in{
                    test::finite_tensor(*d, DType::f32, {5, 7}, seed),
                    test::finite_tensor(*d, DType::f32, {5, 13}, seed + 1)};
                const std::vector<Tensor> got = p(in);
                const std::vector<Tensor> want = mlp(in, w1, b1, w2);
                ASSERT_EQ(got.size(), 2u);
                expect_same_bits(got[0], want[0]);
                expect_same_bits(got[1], want[1]);
                if (seed == 10) earlier = {got[0], want[0]};
            }
            expect_same_bits(earlier[0], earlier[1]);  // later calls left it alone
            EXPECT_EQ(p.stats().traces, 1u);
            EXPECT_EQ(p.stats().replays, 3u);
            EXPECT_EQ(p.stats().signatures, 1u);
        }
}

TEST(Program, ABadReplaySettingIsAnError) {
    const test::ScopedEnv replay("KILN_REPLAY", "graph");
    Program p =
        compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1.0}; });
    const Tensor x = Tensor::ones({3});
    p({x});
    expect_error_naming("KILN_REPLAY", [&] { p({x}); }, {"'graph'", "direct, recorded"});
}

// The trace defers the function's resolves: x * 2 and + 1 fuse into one launch, where resolving
// in between runs two.
TEST(Program, TheTracePlansAcrossTheFunctionsResolves) {
    Device& d = cpu_device();
    Program p = compile([](const std::vector<Tensor>& in) {
        Tensor y = in[0] * 2.0;
        y.resolve();
        return std::vector<Tensor>{y + 1.0};
    });
    const Tensor x = Tensor::from_host(std::vector<float>{1, 2, 3}, {3}, d);
    EXPECT_EQ(p({x})[0].to_host<float>(), (std::vector<float>{3, 5, 7}));
    EXPECT_EQ(p.stats().launches, 1u);
    const Tensor x2 = Tensor::from_host(std::vector<float>{-1, 0.5f, 8}, {3}, d);
    EXPECT_EQ(p({x2})[0].to_host<float>(), (std::vector<float>{-1, 2, 17}));
    EXPECT_EQ(p.stats().replays, 1u);
}

// Outputs that are inputs or captured data come back as those values; each call's computed
// outputs are fresh tensors (an earlier call's stay as they were).
TEST(Program, OutputsAreFreshTensorsAndPassThroughsAreTheirValues) {
    for (const char* mode : kReplayModes) {
        SCOPED_TRACE(mode);
        const test::ScopedEnv replay("KILN_REPLAY", mode);
        Device& d = cpu_device();
        const Tensor captured = Tensor::from_host(std::vector<int32_t>{7, 8}, {2}, d);
        Program p = compile([&](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{in[0], in[0] + captured, captured};
        });
        const Tensor a = Tensor::from_host(std::vector<int32_t>{1, 2}, {2}, d);
        const Tensor b = Tensor::from_host(std::vector<int32_t>{10, 20}, {2}, d);
        const auto first = p({a});
        const auto second = p({b});
        EXPECT_EQ(first[0].to_host<int32_t>(), (std::vector<int32_t>{1, 2}));
        EXPECT_EQ(first[1].to_host<int32_t>(), (std::vector<int32_t>{8, 10}));
        EXPECT_EQ(second[0].to_host<int32_t>(), (std::vector<int32_t>{10, 20}));
        EXPECT_EQ(second[1].to_host<int32_t>(), (std::vector<int32_t>{17, 28}));
        EXPECT_EQ(second[2].to_host<int32_t>(), (std::vector<int32_t>{7, 8}));
        EXPECT_EQ(p.stats().replays, 1u);
    }
}

// A call's computed outputs go into a set of buffers the signature keeps, the first that no
// tensor holds: an output dropped before the next call lends its buffer to it, one still held
// keeps its value and the call takes another set (two are kept, more are made per call).
TEST(Program, OutputBuffersServeAgainOnlyWhenNoTensorHoldsThem) {
    for (Device* d : devices())
        for (const char* mode : kReplayModes) {
            SCOPED_TRACE(d->info().id + " " + mode);
            const test::ScopedEnv replay("KILN_REPLAY", mode);
            Program p = compile([](const std::vector<Tensor>& in) {
                return std::vector<Tensor>{in[0] * 3.0 - 1.0};
            });
            const auto input = [&](float v) { return Tensor::full({5}, v, DType::f32, *d); };
            const auto values = [](float v) { return std::vector<float>(5, v * 3 - 1); };
            p({input(0)});  // the trace
            const Buffer* dropped = nullptr;
            {
                const std::vector<Tensor> y = p({input(1)});
                dropped = &y[0].buffer();
            }
            const std::vector<Tensor> y = p({input(2)});
            EXPECT_EQ(&y[0].buffer(), dropped);
            const std::vector<Tensor> z = p({input(3)});
            const std::vector<Tensor> w = p({input(4)});
            EXPECT_NE(&z[0].buffer(), &y[0].buffer());
            EXPECT_NE(&w[0].buffer(), &y[0].buffer());
            EXPECT_NE(&w[0].buffer(), &z[0].buffer());
            EXPECT_EQ(y[0].to_host<float>(), values(2));
            EXPECT_EQ(z[0].to_host<float>(), values(3));
            EXPECT_EQ(w[0].to_host<float>(), values(4));
            // Two sets kept: the arena's output slot (256 bytes) and a buffer of the output's
            // size; the third was the call's own.
            EXPECT_EQ(p.stats().resident_bytes, 256u + 5 * sizeof(float));
        }
}

// Recorded replays (KILN_REPLAY=recorded): the first call makes a recording, and it reads each
// call's data (a buffer the caller uploads to between calls). On CUDA, whose recordings hold
// their buffers' addresses, a call at other buffers moves the recording there in place, and
// buffers taking turns get a recording each; where recordings run the work again (CPU, OpenCL)
// they cannot move, so a call at buffers not seen recently runs direct and recurring ones get a
// recording.
TEST(Program, RecordingsServeRecurringBuffersAndReadEachCallsData) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const test::ScopedEnv replay("KILN_REPLAY", "recorded");
        const auto fn = [](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{sum(in[0] * in[0], {1}) + 0.5};
        };
        const auto want = [&](const Tensor& x) { return fn({x})[0].to_host<float>(); };
        const bool moves = d->records_graphs();
        Program uploaded = compile(fn);
        const auto buffer = std::make_shared<Buffer>(*d, DType::f32, 6);
        for (int step = 0; step < 6; ++step) {
            buffer->upload(std::vector<float>{float(step), 1, 2, 3, float(-step), 0.25f});
            const Tensor x = Tensor::from_buffer(buffer, {2, 3});
            EXPECT_EQ(uploaded({x})[0].to_host<float>(), want(x)) << "step " << step;
        }
        // Step 0 traced, step 1 recorded; steps 1 to 5 replayed it.
        EXPECT_EQ(uploaded.stats().recorded, 5u);

        Program alternating = compile(fn);
        const Tensor a = test::finite_tensor(*d, DType::f32, {2, 3}, 1).resolve();
        const Tensor b = test::finite_tensor(*d, DType::f32, {2, 3}, 2).resolve();
        for (int call = 0; call < 7; ++call) {
            const Tensor& x = call % 2 ? b : a;
            EXPECT_EQ(alternating({x})[0].to_host<float>(), want(x)) << "call " << call;
        }
        // Call 1 records at b; call 2 moves it to a (or, unmoved, runs direct); call 3 records
        // at b again (a second recording: b recurred; unmoved, finds it); call 4 finds its own
        // (or records at a, which recurred); calls 5 and 6 find theirs.
        EXPECT_EQ(alternating.stats().recorded, moves ? 6u : 5u);

        Program fresh = compile(fn);
        std::vector<Tensor> held;
        for (int call = 0; call < 5; ++call) {
            held.push_back(test::finite_tensor(*d, DType::f32, {2, 3}, 10 + call).resolve());
            EXPECT_EQ(fresh({held.back()})[0].to_host<float>(), want(held.back()));
        }
        // Call 1 records; calls 2 to 4 move it (or run direct).
        EXPECT_EQ(fresh.stats().recorded, moves ? 4u : 1u);
    }
}

// A chain of products: the first reads input 0, the last writes output 0, and one row launch
// reads input 1 and writes output 1 — a move changes three of the program's six launches.
Tensor chain(const Tensor& x, const Tensor& w, int products) {
    Tensor h = x;
    for (int i = 0; i < products; ++i) h = matmul(h, w);
    return h;
}

// On CUDA a recording moved to a call's buffers runs on those alone: inputs that change places,
// captured data passed as an input (whose uses a move could not tell from the capture's: that
// call runs direct), outputs still held by the caller (a new output set each call) — each call
// gives the bits of the function run op by op, its outputs untouched by later calls.
TEST(Program, MovedRecordingsUseEachCallsOwnBuffers) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const test::ScopedEnv replay("KILN_REPLAY", "recorded");
        Tensor w = Tensor::eye(7, {}, 0, DType::f32, *d) * 0.5 +
                   test::finite_tensor(*d, DType::f32, {7, 7}, 1) * 0.0625;
        w.resolve();
        const Tensor captured = test::finite_tensor(*d, DType::f32, {5, 7}, 4).resolve();
        const auto fn = [&](const std::vector<Tensor>& in) {
            const Tensor h = chain(in[0], w, 5);
            return std::vector<Tensor>{h, sum(h * (in[1] * 0.5 + captured), {1})};
        };
        Program p = compile(fn);
        const auto x = [&](uint64_t seed) {
            return test::finite_tensor(*d, DType::f32, {5, 7}, seed).resolve();
        };
        const Tensor x1 = x(10), x2 = x(11), z1 = x(12), z2 = x(13);
        const std::vector<std::vector<Tensor>> calls{
            {x1, z1},       {x2, z2},          {x1, z2},       {z2, x1},
            {x(14), x(15)}, {x(16), captured}, {x(17), x(18)}, {x1, z1}};
        std::vector<std::vector<Tensor>> kept, wanted;
        for (size_t c = 0; c < calls.size(); ++c) {
            SCOPED_TRACE("call " + std::to_string(c));
            kept.push_back(p(calls[c]));
            wanted.push_back(fn(calls[c]));
            for (size_t o = 0; o < 2; ++o) expect_same_bits(kept[c][o], wanted[c][o]);
        }
        for (size_t c = 0; c < calls.size(); ++c) {
            SCOPED_TRACE("afterwards, call " + std::to_string(c));
            for (size_t o = 0; o < 2; ++o) expect_same_bits(kept[c][o], wanted[c][o]);
        }
        // On CUDA every call but the trace and the one passing captured data replays a
        // recording; where recordings run the work again, only the first.
        EXPECT_EQ(p.stats().recorded, d->records_graphs() ? calls.size() - 2 : 1u);
    }
}

// One buffer as both inputs, then as one of them: the recording made over the first call cannot
// tell which of its uses were which input's, so the second call is not a move of it.
TEST(Program, ABufferPassedAsTwoInputsIsNotMovedAsOne) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const test::ScopedEnv replay("KILN_REPLAY", "recorded");
        Tensor w = Tensor::eye(6, {}, 0, DType::f32, *d) * 0.5;
        w.resolve();
        const auto fn = [&](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{chain(in[0], w, 4) * 3.0 - in[1], sum(in[1], {1})};
        };
        Program p = compile(fn);
        const Tensor a = test::finite_tensor(*d, DType::f32, {4, 6}, 1).resolve();
        const Tensor b = test::finite_tensor(*d, DType::f32, {4, 6}, 2).resolve();
        const Tensor c = test::finite_tensor(*d, DType::f32, {4, 6}, 3).resolve();
        for (const auto& in : std::vector<std::vector<Tensor>>{
                 {a, a}, {a, a}, {a, b}, {b, a}, {c, c}, {b, b}, {c, a}}) {
            const std::vector<Tensor> got = p(in), want = fn(in);
            expect_same_bits(got[0], want[0]);
            expect_same_bits(got[1], want[1]);
        }
    }
}

// A linear's weight is captured: on the CPU its transposed copy (the matmul points read a
// transposed operand slowly) reads captured data alone, so it runs once, not every call.
TEST(Program, LaunchesOfCapturedDataAloneRunOnceAndCallsKeepTheirBits) {
    for (Device* d : devices())
        for (const char* mode : kReplayModes) {
            SCOPED_TRACE(d->info().id + " " + mode);
            const test::ScopedEnv replay("KILN_REPLAY", mode);
            Tensor w = test::random_tensor(*d, DType::f32, {9, 7}, 1);
            w.resolve();
            const Tensor b = test::random_tensor(*d, DType::f32, {9}, 2);
            auto fn = [&](const std::vector<Tensor>& in) {
                return std::vector<Tensor>{relu(linear(in[0], w, &b)) + linear(in[0], w * 2.0)};
            };
            Program p = compile(fn);
            for (uint64_t seed : {5, 6, 7}) {
                const std::vector<Tensor> in{test::finite_tensor(*d, DType::f32, {4, 7}, seed)};
                expect_same_bits(p(in)[0], fn(in)[0]);
            }
            if (d->info().backend == Backend::cpu) {
                EXPECT_GE(p.stats().run_once, 1u);
            }
        }
}

// A chain of four products holds three slots between calls: its three intermediates share two
// (each one's slot serves again once the next product has read it) and the output has its own,
// which no intermediate of a later call writes (the caller may still hold it). Replays with new
// inputs stay right.
TEST(Program, IntermediatesShareSlotsByLiveness) {
    Device& d = cpu_device();
    Tensor w = Tensor::eye(16, {}, 0, DType::f32, d) * 2.0;
    w.resolve();
    Program p = compile([&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{matmul(matmul(matmul(matmul(in[0], w), w), w), w)};
    });
    for (float v : {1.0f, 3.0f, -0.5f}) {
        const auto y = p({Tensor::full({16, 16}, v, DType::f32, d)})[0].to_host<float>();
        EXPECT_EQ(y, std::vector<float>(256, v * 16));
    }
    EXPECT_EQ(p.stats().launches, 4u);
    EXPECT_EQ(p.stats().resident_bytes, 3u * 16 * 16 * sizeof(float));
}

// Another shape or dtype traces again; past kMaxSignatures the least recently used is dropped.
TEST(Program, EachSignatureIsTracedOnceWithinTheBound) {
    Device& d = cpu_device();
    int traced = 0;
    Program p = compile([&](const std::vector<Tensor>& in) {
        ++traced;
        return std::vector<Tensor>{in[0] + 1.0};
    });
    const auto call = [&](int64_t n, DType t) { p({Tensor::zeros({n}, t, d)}); };
    call(3, DType::f32);
    call(3, DType::f32);
    call(3, DType::i32);
    call(4, DType::f32);
    EXPECT_EQ(traced, 3);
    for (int64_t n = 5; n < 5 + int64_t(Program::kMaxSignatures); ++n) call(n, DType::f32);
    EXPECT_EQ(p.stats().signatures, Program::kMaxSignatures);
    call(4 + int64_t(Program::kMaxSignatures), DType::f32);  // the most recent: kept
    EXPECT_EQ(traced, 3 + int(Program::kMaxSignatures));
    call(3, DType::f32);  // dropped long ago: traced again
    EXPECT_EQ(traced, 4 + int(Program::kMaxSignatures));
}

// A masked mean over an axis that varies, bucketed to 4 or 8: sizes 3 and 4 share a trace, 5, 7
// and 8 another; each call gives the bits of the function run op by op on its inputs padded with
// zeros to the bucket. A size past the largest, and bad declarations, are errors.
TEST(Program, ABucketedAxisIsPaddedToItsBucketAndSharesItsTrace) {
    Device& d = cpu_device();
    const auto masked_mean = [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sum(in[0] * in[1], {1}) / sum(in[1], {1})};
    };
    int traced = 0;
    Program p = compile(
        [&](const std::vector<Tensor>& in) {
            ++traced;
            return masked_mean(in);
        },
        {.buckets = {{0, 1, {4, 8}}, {1, -1, {4, 8}}}});
    const auto inputs = [&](int64_t n) {
        std::vector<float> mask(size_t(2 * n), 1.0f);
        mask[size_t(n)] = 0;  // the second row's first element is left out
        return std::vector<Tensor>{test::finite_tensor(d, DType::f32, {2, n}, int(n)).resolve(),
                                   Tensor::from_host(mask, {2, n}, d)};
    };
    for (int64_t n : {3, 4, 5, 7, 8}) {
        SCOPED_TRACE(n);
        const std::vector<Tensor> in = inputs(n);
        const int64_t bucket = n <= 4 ? 4 : 8;
        std::vector<Tensor> padded;
        for (const Tensor& t : in) padded.push_back(t.pad({{0, 0}, {0, bucket - n}}).resolve());
        expect_same_bits(p(in)[0], masked_mean(padded)[0].resolve());
    }
    EXPECT_EQ(traced, 2);
    EXPECT_EQ(p.stats().padded, 3u);
    EXPECT_EQ(p.stats().signatures, 2u);
    expect_error_naming("compiled program", [&] { p(inputs(9)); },
                        {"input 0's axis 1 has 9", "up to 8"});
    expect_error_naming("compiled program", [&] { p({inputs(3)[0]}); },
                        {"input 1", "the call has 1 input"});
    expect_error_naming(
        "compiled program",
        [&] {
            p({Tensor::zeros({3}, DType::f32, d), Tensor::zeros({3}, DType::f32, d)});
        },
        {"input 0 has rank 1", "axis 1"});
    const auto declared = [](std::vector<Bucket> buckets) {
        return [buckets] { compile([](const std::vector<Tensor>& in) { return in; }, {buckets}); };
    };
    expect_error_naming("compile", declared({{0, 1, {}}}), {"bucket 0", "no sizes"});
    expect_error_naming("compile", declared({{0, 1, {8, 4}}}), {"8, 4", "ascending"});
    expect_error_naming("compile", declared({{0, 1, {0, 4}}}), {"0, 4", "positive"});
    expect_error_naming("compile", declared({{0, 1, {4}}, {0, 1, {8}}}),
                        {"buckets 0 and 1", "input 0's axis 1"});
}

// A gather's index out of range in a replay is the error a resolve gives.
TEST(Program, AReplaysFaultIsTheResolvesError) {
    for (const char* mode : kReplayModes) {
        SCOPED_TRACE(mode);
        const test::ScopedEnv replay("KILN_REPLAY", mode);
        Device& d = cpu_device();
        const Tensor table = Tensor::arange(0, 12, 1, DType::f32, d).reshape({4, 3});
        Program p = compile([&](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{embedding(table, in[0]) * 2.0};
        });
        EXPECT_EQ(p({Tensor::from_host(std::vector<int32_t>{3, 0}, {2}, d)})[0].to_host<float>(),
                  (std::vector<float>{18, 20, 22, 0, 2, 4}));
        expect_error_naming("index",
                            [&] {
                                p({Tensor::from_host(std::vector<int32_t>{1, 4}, {2}, d)});
                            },
                            {"index 4"});
        // The fault record starts clean again.
        EXPECT_EQ(p({Tensor::from_host(std::vector<int32_t>{1, 1}, {2}, d)})[0].to_host<float>(),
                  (std::vector<float>{6, 8, 10, 6, 8, 10}));
    }
}

TEST(Program, BadCallsAndFailingTracesAreErrorsThatLeaveNothingCached) {
    Device& d = cpu_device();
    const Tensor x = Tensor::ones({2}, DType::f32, d);
    Program reads = compile([](const std::vector<Tensor>& in) {
        const Tensor y = in[0] * 3.0;
        (void)y.to_host<float>();
        return std::vector<Tensor>{y};
    });
    expect_error_naming("compiled program", [&] { reads({x}); }, {"read a tensor's data"});
    EXPECT_EQ(reads.stats().signatures, 0u);
    EXPECT_FALSE(tracing());

    bool fail_now = true;
    Program flaky = compile([&](const std::vector<Tensor>& in) {
        if (fail_now) kiln::fail("the function's own error");
        return std::vector<Tensor>{in[0] - 1.0};
    });
    EXPECT_THAT(test::error_of([&] { flaky({x}); }), HasSubstr("the function's own error"));
    EXPECT_EQ(flaky.stats().signatures, 0u);
    fail_now = false;
    EXPECT_EQ(flaky({x})[0].to_host<float>(), (std::vector<float>{0, 0}));

    Program none = compile([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; });
    expect_error_naming("compiled program", [&] { none({x}); }, {"no tensors"});
    Program empty = compile([](const std::vector<Tensor>&) { return std::vector<Tensor>(1); });
    expect_error_naming("compiled program", [&] { empty({x}); }, {"output 0", "empty"});
    Program p = compile([](const std::vector<Tensor>& in) { return in; });
    expect_error_naming("compiled program", [&] { p({x, Tensor()}); }, {"input 1", "empty"});
    expect_error_naming("compile", [] { compile(nullptr); }, {"no function"});
}

}  // namespace
}  // namespace kiln
