// Program::save and Program::load: a loaded program gives the saved program's bits on every
// device; on the device model it was saved on it neither plans nor compiles; elsewhere, or saved
// by another build, it plans again; a truncated, edited or foreign file is a kiln::Error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache/temp_dir.hpp"
#include "kiln/compile.hpp"
#include "kiln/program.hpp"
#include "plan/resolve.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"
#include "support/scoped_env.hpp"
#include "tensor/program_file.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using test::expect_error_naming;

void expect_same_bits(const Tensor& got, const Tensor& want) {
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.dtype(), want.dtype());
    EXPECT_TRUE(
        test::identical({got.dtype(), got.to_host_bytes()}, {want.dtype(), want.to_host_bytes()}));
}

// A block with captured weights, a resolve inside, an intermediate read twice, two outputs, a
// gather (a fault site) and a fold.
struct Model {
    Tensor w1, b1, w2, table;
    explicit Model(Device& d)
        : w1(test::random_tensor(d, DType::f32, {13, 7}, 1) * 0.25),
          b1(test::random_tensor(d, DType::f32, {13}, 2)),
          w2(test::random_tensor(d, DType::f32, {7, 13}, 3) * 0.25),
          table(test::random_tensor(d, DType::f32, {11, 7}, 4)) {}
    std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
        Tensor h = gelu(linear(in[0] + index_select(table, 0, in[1]), w1, &b1));
        h.resolve();
        return {linear(h, w2) + in[0], softmax(h, 1)};
    }
};

std::vector<Tensor> inputs_on(Device& d, int64_t rows, uint64_t seed) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < rows; ++i) ids.push_back(int32_t((i * 7 + int64_t(seed)) % 11));
    Tensor x = test::finite_tensor(d, DType::f32, {rows, 7}, seed);
    x.resolve();  // data, so that a call's planning is its own
    return {x, Tensor::from_host(ids, {rows}, d)};
}

// A fresh cache directory (kernels and tuning) for one test, and the program file's path in it.
class ProgramFile : public ::testing::Test {
  protected:
    cache::TempDir dir_{"kiln-program-file-test-", "test"};
    test::ScopedEnv cache_{"KILN_CACHE_DIR", (dir_.path() / "cache").c_str()};
    fs::path file_ = dir_.path() / "model.kprog";

    // Kernel binaries the disk cache holds for `d`.
    size_t cached_kernels(const Device& d) const {
        std::error_code ec;
        size_t n = 0;
        for (const auto& e :
             fs::directory_iterator(dir_.path() / "cache" / "kernels" / d.info().id, ec))
            n += e.path().extension() == ".bin";
        return n;
    }
    // Forgets what this process compiled and planned, as another process would start.
    static void forget() {
        clear_memory_cache();
        plan::clear_plan_cache();
    }
};

TEST_F(ProgramFile, ALoadedProgramGivesTheSavedBitsWithoutPlanningOrCompiling) {
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const Model model(*d);
        Program p = compile(model);
        p(inputs_on(*d, 5, 10));
        p.save(file_.string(), "note");
        const std::vector<std::vector<Tensor>> calls{inputs_on(*d, 5, 10), inputs_on(*d, 5, 20)};
        std::vector<std::vector<Tensor>> want;
        for (const auto& in : calls) {
            want.push_back(model(in));  // op by op
            resolve(want.back());
        }

        // Another process on this machine: the disk cache emptied, nothing in memory.
        fs::remove_all(dir_.path() / "cache");
        forget();
        const uint64_t planned = plan::counters().misses;
        Program loaded = Program::load(file_.string());
        EXPECT_EQ(loaded.annotation(), "note");
        for (size_t c = 0; c < calls.size(); ++c) {
            const auto got = loaded(calls[c]);
            ASSERT_EQ(got.size(), 2u);
            expect_same_bits(got[0], want[c][0]);
            expect_same_bits(got[1], want[c][1]);
        }
        EXPECT_EQ(plan::counters().misses, planned) << "the loaded program planned";
        EXPECT_EQ(cached_kernels(*d), 0u) << "the loaded program compiled kernels";
        EXPECT_EQ(loaded.stats().traces, 1u);
        EXPECT_EQ(loaded.stats().replays, 1u);
        expect_error_naming("loaded program", [&] { loaded(inputs_on(*d, 4, 1)); },
                            {"f32[4, 7]", "f32[5, 7]"});
    }
}

// Rewrites the file's plans as if made on another device model, or the whole file as if saved
// by another build: both plan again, with the same bits.
TEST_F(ProgramFile, AnotherDeviceModelOrBuildPlansAgainFromTheSavedGraph) {
    Device& d = cpu_device();
    const Model model(d);
    Program p = compile(model);
    const auto in = inputs_on(d, 6, 3);
    const auto want = p(in);
    p.save(file_.string());
    program::SavedProgram saved = program::read_program_file(file_);
    ASSERT_EQ(saved.signatures.size(), 1u);
    ASSERT_EQ(saved.signatures[0].plans.size(), 1u);

    const fs::path other_model = dir_.path() / "other-model.kprog";
    program::SavedProgram edited = saved;
    edited.signatures[0].plans[0].device_id = "cpu-another-model";
    program::write_program_file(other_model, edited);
    const fs::path other_build = dir_.path() / "other-build.kprog";
    program::write_program_file(other_build, saved, "0.0.0+another-build");
    EXPECT_TRUE(program::read_program_file(other_build).signatures[0].plans.empty());

    for (const fs::path& path : {other_model, other_build}) {
        SCOPED_TRACE(path.filename().string());
        forget();
        const uint64_t planned = plan::counters().misses;
        Program loaded = Program::load(path.string());
        const auto got = loaded(in);
        EXPECT_GT(plan::counters().misses, planned) << "expected the graph planned again";
        expect_same_bits(got[0], want[0]);
        expect_same_bits(got[1], want[1]);
        // Saved again, it keeps the saved plan and adds this device's.
        loaded.save(path.string());
        const auto resaved = program::read_program_file(path);
        EXPECT_EQ(resaved.signatures[0].plans.size(), path == other_model ? 2u : 1u);
    }
}

TEST_F(ProgramFile, SignaturesBucketsAndEveryOutputFormSurviveTheFile) {
    Device& d = cpu_device();
    const Tensor w = test::random_tensor(d, DType::f32, {4}, 7);
    Program p = compile(
        [&](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{sum(in[0] * w, {1}), in[0], w};  // pass-throughs too
        },
        {.buckets = {{0, 0, {4, 8}}}});
    const Tensor three = test::finite_tensor(d, DType::f32, {3, 4}, 1);
    const Tensor six = test::finite_tensor(d, DType::f32, {6, 4}, 2);
    const auto want3 = p({three});
    const auto want6 = p({six});
    p.save(file_.string());
    forget();
    Program loaded = Program::load(file_.string());
    for (const auto& [x, want] : {std::pair{three, want3}, std::pair{six, want6}}) {
        const auto got = loaded({x});
        ASSERT_EQ(got.size(), 3u);
        for (size_t i = 0; i < 3; ++i) expect_same_bits(got[i], want[i]);
    }
    EXPECT_EQ(loaded.stats().padded, 2u);
    EXPECT_EQ(loaded.stats().signatures, 2u);
    expect_error_naming("bucket",
                        [&] {
                            loaded({test::finite_tensor(d, DType::f32, {9, 4}, 3)});
                        },
                        {"9 elements", "up to 8"});
}

TEST_F(ProgramFile, BadFilesAndBadSavesAreErrors) {
    Device& d = cpu_device();
    Program p =
        compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; });
    expect_error_naming("nothing to save", [&] { p.save(file_.string()); }, {"call it once"});
    p({Tensor::ones({3}, DType::f32, d)});
    p.save(file_.string());
    std::ifstream in(file_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto write = [&](const std::string& name, const std::string& content) {
        const fs::path path = dir_.path() / name;
        std::ofstream(path, std::ios::binary) << content;
        return path.string();
    };
    expect_error_naming(
        "truncated",
        [&] { Program::load(write("short.kprog", bytes.substr(0, bytes.size() - 5))); },
        {"short.kprog", "truncated"});
    for (size_t cut : {size_t{4}, size_t{10}, size_t{16}, size_t{40}})  // inside the header
        expect_error_naming("program file",
                            [&] { Program::load(write("cut.kprog", bytes.substr(0, cut))); },
                            {"cut.kprog"});
    std::string flipped = bytes;
    flipped[flipped.size() - 20] ^= 0x10;
    expect_error_naming("checksum", [&] { Program::load(write("edited.kprog", flipped)); },
                        {"edited.kprog", "corrupted or edited"});
    std::string other_format = bytes;
    other_format[8] = 99;
    expect_error_naming("format", [&] { Program::load(write("format.kprog", other_format)); },
                        {"format 99", "format 1"});
    expect_error_naming("KILNPROG", [&] { Program::load(write("text.kprog", "hello, world")); },
                        {"text.kprog"});
    expect_error_naming("does not exist",
                        [&] { Program::load((dir_.path() / "absent.kprog").string()); },
                        {"absent.kprog"});
    expect_error_naming("cannot save",
                        [&] { p.save((dir_.path() / "no-such-dir" / "x.kprog").string()); },
                        {"no-such-dir"});
    // A failed save leaves the file it would have replaced whole.
    EXPECT_NO_THROW(Program::load(file_.string()));
}

}  // namespace
}  // namespace kiln
