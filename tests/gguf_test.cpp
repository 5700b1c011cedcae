// GgufFile: a file written here with every metadata kind and several tensor types reads back
// exactly; every truncation of it, and each hostile edit (absurd counts and lengths, unknown
// types, bad dimensions, misaligned, overlapping or out-of-file data, repeated names, a FIFO) is
// a kiln::Error naming what was wrong.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/gguf.hpp"
#include "support/errors.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Kind = GgufValue::Kind;

// Builds GGUF bytes field by field, as llama.cpp's writer lays them out.
class Writer {
  public:
    template <typename T>
    Writer& put(T v) {
        bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
        return *this;
    }
    Writer& str(const std::string& s) {
        put<uint64_t>(s.size());
        bytes_ += s;
        return *this;
    }
    Writer& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
        return put<uint32_t>(0x46554747).put(version).put(tensors).put(kvs);
    }
    template <typename T>
    Writer& kv(const std::string& key, Kind kind, T v) {
        return str(key).put(static_cast<uint32_t>(kind)).put(v);
    }
    Writer& tensor(const std::string& name, std::vector<uint64_t> dims, GgufType type,
                   uint64_t offset) {
        str(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) put(d);
        return put(static_cast<uint32_t>(type)).put(offset);
    }
    Writer& pad_to(size_t alignment) {
        bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment, '\0');
        return *this;
    }
    Writer& raw(const std::string& data) {
        bytes_ += data;
        return *this;
    }
    const std::string& bytes() const { return bytes_; }

  private:
    std::string bytes_;
};

class GgufTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kiln-gguf-test-" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path write(const std::string& bytes, const std::string& name = "model.gguf") {
        std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << bytes;
        return dir_ / name;
    }
    // Opening `bytes` fails with a kiln::Error naming `needle`.
    void expect_refused(const std::string& bytes, const std::string& needle) {
        const fs::path path = write(bytes);
        test::expect_error_naming("GGUF", [&] { GgufFile f(path); }, {needle});
    }
    fs::path dir_;
};

// F32 [3, 4] (dims 4, 3), F16 [2], Q8_0 [2, 64] and I32 [5]; alignment 64; the data ends where
// the last tensor does.
struct Sample {
    std::string bytes;
    std::vector<float> f32;
    std::vector<uint16_t> f16;
    std::string q8;
    std::vector<int32_t> i32;
};

Sample sample() {
    Sample s;
    for (int i = 0; i < 12; ++i) s.f32.push_back(0.5f * static_cast<float>(i) - 2.0f);
    s.f16 = {0x3c00, 0xc000};  // 1.0, -2.0
    for (int b = 0; b < 4; ++b) {
        s.q8 += std::string("\x00\x3c", 2);  // d = 1.0 in f16
        for (int q = 0; q < 32; ++q) s.q8 += static_cast<char>(q - 16 + b);
    }
    s.i32 = {7, -1, 0, 2147483647, -2147483647 - 1};
    Writer w;
    w.header(4, 11);
    w.kv("general.alignment", Kind::u32, uint32_t{64});
    w.str("general.name").put(static_cast<uint32_t>(Kind::string)).str("tiny");
    w.kv("a.u8", Kind::u8, uint8_t{200});
    w.kv("a.i16", Kind::i16, int16_t{-300});
    w.kv("a.u64", Kind::u64, uint64_t{1} << 40);
    w.kv("a.i64", Kind::i64, int64_t{-5});
    w.kv("a.f32", Kind::f32, 0.25f);
    w.kv("a.f64", Kind::f64, -1.5);
    w.kv("a.bool", Kind::boolean, uint8_t{1});
    w.str("a.ints").put(static_cast<uint32_t>(Kind::array)).put(static_cast<uint32_t>(Kind::i32));
    w.put<uint64_t>(3).put<int32_t>(1).put<int32_t>(-2).put<int32_t>(3);
    w.str("a.words")
        .put(static_cast<uint32_t>(Kind::array))
        .put(static_cast<uint32_t>(Kind::string));
    w.put<uint64_t>(3).str("<s>").str("").str("hello");
    w.tensor("w.f32", {4, 3}, GgufType::f32, 0);
    w.tensor("w.f16", {2}, GgufType::f16, 64);
    w.tensor("w.q8", {64, 2}, GgufType::q8_0, 128);
    w.tensor("w.i32", {5}, GgufType::i32, 320);
    w.pad_to(64);
    std::string data(340, '\0');
    std::memcpy(data.data(), s.f32.data(), 48);
    std::memcpy(data.data() + 64, s.f16.data(), 4);
    std::memcpy(data.data() + 128, s.q8.data(), s.q8.size());
    std::memcpy(data.data() + 320, s.i32.data(), 20);
    w.raw(data);
    s.bytes = w.bytes();
    return s;
}

TEST_F(GgufTest, AFileWithEveryMetadataKindAndSeveralTypesReadsBackExactly) {
    const Sample s = sample();
    const GgufFile f(write(s.bytes));
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.value("general.name").as_string(), "tiny");
    EXPECT_EQ(f.value("a.u8").as_int(), 200);
    EXPECT_EQ(f.value("a.i16").as_int(), -300);
    EXPECT_EQ(f.value("a.u64").as_int(), int64_t{1} << 40);
    EXPECT_EQ(f.value("a.i64").as_int(), -5);
    EXPECT_EQ(f.value("a.f32").as_float(), 0.25);
    EXPECT_EQ(f.value("a.f64").as_float(), -1.5);
    EXPECT_TRUE(f.value("a.bool").as_bool());
    EXPECT_EQ(f.value("a.ints").as_ints(), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(f.value("a.words").as_strings(), (std::vector<std::string>{"<s>", "", "hello"}));
    test::expect_error_naming("a.words", [&] { f.value("a.words").as_int("a.words"); },
                              {"expected an integer"});
    test::expect_error_naming("GGUF", [&] { f.value("absent"); }, {"no metadata key 'absent'"});

    ASSERT_EQ(f.tensors().size(), 4u);
    const GgufTensorInfo& w = f.tensor("w.f32");
    EXPECT_EQ(w.shape(), (Shape{3, 4}));
    EXPECT_EQ(w.bytes, 48u);
    const Tensor t = f.load("w.f32");
    EXPECT_EQ(t.dtype(), DType::f32);
    EXPECT_EQ(t.shape(), (Shape{3, 4}));
    EXPECT_EQ(t.to_host<float>(), s.f32);
    const Tensor h = f.load("w.f16");
    EXPECT_EQ(h.dtype(), DType::f16);
    EXPECT_EQ(cast(h, DType::f32).to_host<float>(), (std::vector<float>{1.0f, -2.0f}));
    const std::vector<uint8_t> q8 = f.tensor_bytes("w.q8");
    EXPECT_EQ(std::string(q8.begin(), q8.end()), s.q8);
    const Tensor q = f.load("w.q8");
    EXPECT_EQ(q.dtype(), DType::u8);
    EXPECT_EQ(q.shape(), (Shape{2, 68}));
    EXPECT_EQ(f.load("w.i32").to_host<int32_t>(), s.i32);
    EXPECT_EQ(name(f.tensor("w.q8").type), std::string("Q8_0"));
    const std::vector<float> values = f.dequantize("w.q8");  // d = 1: the quants themselves
    ASSERT_EQ(values.size(), 128u);
    for (size_t i = 0; i < values.size(); ++i)
        EXPECT_EQ(values[i],
                  static_cast<float>(static_cast<int>(i % 32) - 16 + static_cast<int>(i / 32)));
    EXPECT_EQ(f.dequantize("w.f32"), s.f32);
    test::expect_error_naming("GGUF", [&] { f.dequantize("w.i32"); }, {"'w.i32' is I32"});
    const GgufBlocks blocks = f.load_blocks("w.q8");  // the quants as i8, a scale of 1 a block
    EXPECT_EQ(blocks.values.dtype(), DType::i8);
    EXPECT_EQ(blocks.values.shape(), (Shape{2, 64}));
    const std::vector<int8_t> quants = blocks.values.to_host<int8_t>();
    for (size_t i = 0; i < quants.size(); ++i) EXPECT_EQ(static_cast<float>(quants[i]), values[i]);
    EXPECT_EQ(blocks.scales.shape(), (Shape{2, 2}));
    EXPECT_EQ(blocks.scales.to_host<float>(), std::vector<float>(4, 1.0f));
    EXPECT_FALSE(blocks.mins.has_value());
    test::expect_error_naming("GGUF", [&] { f.load_blocks("w.f32"); },
                              {"'w.f32' is F32; kiln loads the block formats"});
    test::expect_error_naming("GGUF", [&] { f.tensor("w.absent"); }, {"no tensor 'w.absent'"});
}

TEST_F(GgufTest, EveryTruncationIsAnError) {
    const std::string bytes = sample().bytes;
    const size_t data_start = bytes.size() - 340;
    for (size_t n = 0; n < bytes.size(); n += (n < data_start ? 1 : 61)) {
        const fs::path path = write(bytes.substr(0, n));
        EXPECT_THROW(GgufFile{path}, Error) << n << " bytes";
    }
}

TEST_F(GgufTest, HostileHeadersAreErrorsNamingWhatWasWrong) {
    expect_refused("GGUX", "not \"GGUF\"");
    expect_refused(Writer().header(0, 0, 1).bytes(), "version 1; expected 2 or 3");
    expect_refused(Writer().header(uint64_t{1} << 60, 0).bytes(), "tensors cannot fit");
    expect_refused(Writer().header(0, uint64_t{1} << 60).bytes(), "metadata entries cannot fit");
    expect_refused(
        Writer().header(0, 1).put<uint64_t>(uint64_t{1} << 50).raw("k-and-more-bytes").bytes(),
        "a string within the file");
    expect_refused(Writer().header(0, 1).str("k").put<uint32_t>(13).put<uint8_t>(0).bytes(),
                   "value type 13");
    expect_refused(
        Writer().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1).bytes(),
        "an array of arrays");
    expect_refused(Writer()
                       .header(0, 1)
                       .str("k")
                       .put<uint32_t>(9)
                       .put<uint32_t>(4)
                       .put<uint64_t>(uint64_t{1} << 61)
                       .bytes(),
                   "elements of at least 4 bytes");
    expect_refused(
        Writer().header(0, 2).kv("k", Kind::u8, uint8_t{1}).kv("k", Kind::u8, uint8_t{2}).bytes(),
        "'k' appears twice");
    expect_refused(Writer().header(0, 1).kv("general.alignment", Kind::u32, uint32_t{48}).bytes(),
                   "expected a power of two");
    expect_refused(Writer().header(0, 1).kv("general.alignment", Kind::u64, uint64_t{32}).bytes(),
                   "expected a u32");
}

TEST_F(GgufTest, HostileTensorInfosAreErrorsNamingTheTensor) {
    const auto one = [](std::vector<uint64_t> dims, GgufType type, uint64_t offset, size_t data) {
        Writer w;
        w.header(1, 0).tensor("t", dims, type, offset).pad_to(32);
        return w.raw(std::string(data, '\0')).bytes();
    };
    expect_refused(one({}, GgufType::f32, 0, 0), "0 dimensions");
    expect_refused(one({1, 1, 1, 1, 1}, GgufType::f32, 0, 4), "5 dimensions");
    expect_refused(one({0}, GgufType::f32, 0, 0), "dimension 0 of 0");
    expect_refused(one({uint64_t{1} << 40, uint64_t{1} << 40}, GgufType::f32, 0, 0), "within 2^62");
    Writer unknown;
    unknown.header(1, 0).str("t").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(4).put<uint64_t>(
        0);
    expect_refused(unknown.bytes(), "ggml type 4");
    expect_refused(one({48}, GgufType::q8_0, 0, 64), "multiple of its blocks' 32 values");
    expect_refused(one({4}, GgufType::f32, 16, 64), "expected a multiple of the alignment 32");
    expect_refused(one({64}, GgufType::f32, 0, 255), "ends past the file");
    expect_refused(one({4}, GgufType::f32, uint64_t{1} << 63, 32), "ends past the file");
    Writer overlap;
    overlap.header(2, 0).tensor("a", {16}, GgufType::f32, 0).tensor("b", {8}, GgufType::f32, 32);
    overlap.pad_to(32).raw(std::string(128, '\0'));
    expect_refused(overlap.bytes(), "'a' and 'b' overlap");
    Writer twice;
    twice.header(2, 0).tensor("a", {8}, GgufType::f32, 0).tensor("a", {8}, GgufType::f32, 32);
    twice.pad_to(32).raw(std::string(64, '\0'));
    expect_refused(twice.bytes(), "the tensor 'a' appears twice");
    Writer f64;
    f64.header(1, 0).tensor("d", {2}, GgufType::f64, 0).pad_to(32).raw(std::string(32, '\0'));
    const GgufFile f(write(f64.bytes()));
    test::expect_error_naming("GGUF", [&] { f.load("d"); }, {"F64, which kiln has no dtype for"});
}

TEST_F(GgufTest, APathThatIsNotARegularFileIsAnErrorAndALinkIsFollowed) {
    test::expect_error_naming("GGUF", [&] { GgufFile f(dir_ / "absent.gguf"); }, {"cannot open"});
    ASSERT_EQ(mkfifo((dir_ / "fifo.gguf").c_str(), 0600), 0);
    test::expect_error_naming("GGUF", [&] { GgufFile f(dir_ / "fifo.gguf"); },
                              {"not a regular file"});
    test::expect_error_naming("GGUF", [&] { GgufFile f(dir_); }, {"not a regular file"});
    const fs::path real = write(sample().bytes, "blob");
    fs::create_symlink(real, dir_ / "linked.gguf");
    EXPECT_EQ(GgufFile(dir_ / "linked.gguf").tensors().size(), 4u);
}

}  // namespace
}  // namespace kiln
