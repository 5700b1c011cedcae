// Reading .safetensors files: files written here, one good (every dtype kiln has, a scalar, an
// empty tensor, metadata) loaded on every device, and one of each kind of bad (truncated,
// absurd or malformed header, missing fields, overflowing shapes, offsets reversed, out of range,
// the wrong size, overlapping, leaving holes), each a kiln::Error naming the file, the tensor and
// what was expected.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "cache/temp_dir.hpp"
#include "kiln/safetensors.hpp"
#include "support/errors.hpp"

namespace kiln {
namespace {

using test::error_of;
using Bytes = std::vector<uint8_t>;

class Safetensors : public ::testing::Test {
  protected:
    cache::TempDir dir{"kiln-safetensors-test-", "safetensors test"};

    // A file of an 8-byte little-endian header length, `header`, then `data`.
    std::filesystem::path write(const std::string& header, const Bytes& data = {},
                                std::optional<uint64_t> length = std::nullopt) {
        const auto path = dir.path() / fmt::format("f{}.safetensors", files_++);
        std::ofstream out(path, std::ios::binary);
        uint64_t n = length.value_or(header.size());
        for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
        out << header;
        out.write(reinterpret_cast<const char*>(data.data()),
                  static_cast<std::streamsize>(data.size()));
        return path;
    }

    // The error opening (and loading everything of) `path`, asserted to name the file and each
    // needle.
    void expect_error(const std::filesystem::path& path, const std::vector<std::string>& needles) {
        const std::string what = error_of([&] { SafetensorsFile(path).load_all(); });
        EXPECT_NE(what.find(path.string()), std::string::npos) << what;
        for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what;
    }

    // One F32 tensor "t" of shape `shape` and byte range `offsets`, over `data_bytes` of data.
    std::filesystem::path one_tensor(const std::string& shape, const std::string& offsets,
                                     size_t data_bytes) {
        return write(fmt::format(R"({{"t": {{"dtype": "F32", "shape": {}, "data_offsets": {}}}}})",
                                 shape, offsets),
                     Bytes(data_bytes, 0));
    }

  private:
    int files_ = 0;
};

template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
    Bytes out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

TEST_F(Safetensors, EveryKilnDTypeLoadsOnEveryDevice) {
    const std::vector<float> f32 = {1.5f, -2.0f, 0.25f, 3e38f, -0.0f, 7.0f};
    const std::vector<int64_t> i64 = {-1, int64_t{1} << 40};
    const std::vector<int32_t> i32 = {-7, 9, 2147483647};
    const std::vector<uint32_t> u32 = {4000000000u};
    const Bytes u8 = {0, 200, 255}, i8 = {0x80, 0x7f}, boolean = {1, 0, 1, 1};
    const Bytes f16 = {0x00, 0x3c, 0x00, 0xc0};   // 1.0, -2.0
    const Bytes bf16 = {0x80, 0x3f, 0x49, 0x40};  // 1.0, 3.140625
    struct Want {
        std::string name, dtype;
        Shape shape;
        Bytes data;
        DType kiln;
    };
    // Written out of name order: entries come back in the order of their data.
    const std::vector<Want> want = {
        {"w.f32", "F32", {2, 3}, bytes_of(f32), DType::f32},
        {"a.i64", "I64", {2}, bytes_of(i64), DType::i64},
        {"b.i32", "I32", {3}, bytes_of(i32), DType::i32},
        {"c.u32", "U32", {}, bytes_of(u32), DType::u32},
        {"d.u8", "U8", {3, 1}, u8, DType::u8},
        {"e.i8", "I8", {2}, i8, DType::i8},
        {"f.bool", "BOOL", {2, 2}, boolean, DType::boolean},
        {"g.empty", "F32", {0, 5}, {}, DType::f32},
        {"h.f16", "F16", {2}, f16, DType::f16},
        {"i.bf16", "BF16", {2}, bf16, DType::bf16},
    };
    std::string header = R"({"__metadata__": {"format": "pt", "note": "x"})";
    Bytes data;
    for (const auto& w : want) {
        header += fmt::format(
            R"(, "{}": {{"dtype": "{}", "shape": [{}], "data_offsets": [{}, {}]}})", w.name,
            w.dtype, fmt::join(w.shape, ", "), data.size(), data.size() + w.data.size());
        data.insert(data.end(), w.data.begin(), w.data.end());
    }
    header += "}  ";  // the format allows trailing spaces
    const auto path = write(header, data);

    const SafetensorsFile file(path);
    EXPECT_EQ(file.metadata(),
              (std::map<std::string, std::string>{{"format", "pt"}, {"note", "x"}}));
    ASSERT_EQ(file.entries().size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(file.entries()[i].name, want[i].name);
        EXPECT_EQ(file.entries()[i].shape, want[i].shape);
        EXPECT_EQ(file.entries()[i].dtype, want[i].kiln);
    }
    EXPECT_TRUE(file.contains("h.f16"));
    EXPECT_FALSE(file.contains("h"));
    for (Device* d : devices()) {
        SCOPED_TRACE(d->info().id);
        const auto tensors = file.load_all(*d);
        ASSERT_EQ(tensors.size(), want.size());
        for (const auto& w : want) {
            const Tensor& t = tensors.at(w.name);
            EXPECT_EQ(&t.device(), d);
            EXPECT_EQ(t.dtype(), w.kiln) << w.name;
            EXPECT_EQ(t.shape(), w.shape) << w.name;
            EXPECT_EQ(t.to_host_bytes(), w.data) << w.name;
        }
    }
    EXPECT_EQ(load_safetensors(path).at("w.f32").to_host<float>(), f32);
}

TEST_F(Safetensors, AFormatDTypeKilnLacksIsDescribedButNotLoaded) {
    const auto path = write(R"({"x": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}, )"
                            R"("y": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                            Bytes(12, 0));
    const SafetensorsFile file(path);
    EXPECT_EQ(file.entry("x").dtype, std::nullopt);
    EXPECT_EQ(file.entry("x").dtype_name, "F64");
    EXPECT_EQ(file.load("y").to_host<float>(), std::vector<float>{0.0f});
    for (const auto& what : {error_of([&] { file.load("x"); }), error_of([&] { file.load_all(); })})
        for (const char* needle : {"'x'", "F64", "expected one of F32", path.c_str()})
            EXPECT_NE(what.find(needle), std::string::npos) << what;
    const std::string missing = error_of([&] { file.load("z"); });
    EXPECT_NE(missing.find("no tensor named 'z'"), std::string::npos) << missing;
}

TEST_F(Safetensors, NoFileOrATooShortOneIsAnError) {
    expect_error(dir.path() / "absent.safetensors", {"not a regular file"});
    expect_error(dir.path(), {"not a regular file"});
    const auto path = dir.path() / "short.safetensors";
    std::ofstream(path, std::ios::binary) << "abc";
    expect_error(path, {"3 bytes", "expected at least 8"});
}

TEST_F(Safetensors, AHeaderLengthPastTheFileOrAbsurdIsAnError) {
    expect_error(write("{}", {}, 3), {"header length 3 runs past the file's end (2 bytes"});
    expect_error(write("{}", {}, uint64_t{1} << 62), {"absurd", "expected at most 100000000"});
}

TEST_F(Safetensors, AHeaderThatIsNotAnObjectOfTensorsIsAnError) {
    expect_error(write(R"({"t": {"dtype": "F32", )"), {"not valid JSON"});
    expect_error(write("[1, 2]"), {"the header is array; expected a JSON object"});
    expect_error(write(R"({"t": 3})"), {"tensor 't'", "number", "expected an object"});
    expect_error(write(R"({"t": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},)"
                       R"( "t": {"dtype": "F32", "shape": [], "data_offsets": [4, 8]}})",
                       Bytes(8, 0)),
                 {"tensor 't'", "named twice"});
    expect_error(write(R"({"__metadata__": {"format": 1}})"),
                 {"__metadata__ 'format' is number; expected a string"});
    expect_error(write(R"({"__metadata__": []})"), {"__metadata__ is array; expected an object"});
}

TEST_F(Safetensors, AHeaderNestedDeeperOrWithLongerArraysThanTensorsNeedIsAnError) {
    // A megabyte of brackets: refused at the fourth, before the parser builds anything deep.
    const size_t deep = 500'000;
    expect_error(write(std::string(deep, '[') + std::string(deep, ']')),
                 {"nests deeper than 3 levels"});
    expect_error(write(R"({"t": {"dtype": "F32", "shape": [[1]], "data_offsets": [0, 4]}})"),
                 {"nests deeper than 3 levels"});
    expect_error(write(R"({"__metadata__": {"a": [["b"]]}})"), {"nests deeper than 3 levels"});
    // A shape of 65 ones: longer than any array a header holds.
    std::string ones = "1";
    for (int i = 1; i < 65; ++i) ones += ", 1";
    expect_error(one_tensor("[" + ones + "]", "[0, 4]", 4), {"an array longer than 64 values"});
    // 64 passes the parser (the entry is then checked as a tensor's).
    ones = ones.substr(3);
    EXPECT_NO_THROW(SafetensorsFile(one_tensor("[" + ones + "]", "[0, 4]", 4)));
}

TEST_F(Safetensors, MissingOrUnknownFieldsAreErrors) {
    expect_error(write(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", Bytes(4, 0)),
                 {"tensor 't'", "no 'dtype' field"});
    expect_error(write(R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})", Bytes(4, 0)),
                 {"tensor 't'", "no 'shape' field"});
    expect_error(write(R"({"t": {"dtype": "F32", "shape": [1]}})", Bytes(4, 0)),
                 {"tensor 't'", "no 'data_offsets' field"});
    expect_error(write(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 0}})",
                       Bytes(4, 0)),
                 {"tensor 't'", "unknown field 'x'"});
    expect_error(
        write(R"({"t": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}})", Bytes(4, 0)),
        {"tensor 't'", "unknown dtype 'Q7'", "expected one of F32"});
    expect_error(write(R"({"t": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", Bytes(4, 0)),
                 {"tensor 't'", "dtype is number; expected a string"});
}

TEST_F(Safetensors, BadShapesAreErrors) {
    expect_error(one_tensor("[-1]", "[0, 4]", 4), {"tensor 't'", "holds -1", "non-negative"});
    expect_error(one_tensor("[1.5]", "[0, 4]", 4), {"tensor 't'", "holds 1.5"});
    expect_error(one_tensor("3", "[0, 4]", 4), {"tensor 't'", "shape is number"});
    expect_error(one_tensor("[1099511627776, 1099511627776]", "[0, 4]", 4),
                 {"tensor 't'", "more elements than 2^63"});
    expect_error(one_tensor("[4611686018427387904]", "[0, 4]", 4),
                 {"tensor 't'", "more bytes than 2^63"});
}

TEST_F(Safetensors, BadDataOffsetsAreErrors) {
    expect_error(one_tensor("[1]", "[0]", 4), {"tensor 't'", "expected [begin, end]"});
    expect_error(one_tensor("[1]", "[-4, 0]", 4), {"tensor 't'", "expected [begin, end]"});
    expect_error(one_tensor("[1]", "[4, 0]", 4), {"tensor 't'", "reversed"});
    expect_error(one_tensor("[2]", "[0, 4]", 8), {"tensor 't'", "hold 4 bytes", "takes 8"});
    // The header promises 16 bytes the file does not have: a truncated file.
    expect_error(one_tensor("[4]", "[0, 16]", 12),
                 {"tensor 't'", "run past the data section's 12 bytes"});
    // A range far past any file, whose end would wrap a 64-bit offset.
    expect_error(one_tensor("[0]", "[18446744073709551615, 18446744073709551615]", 4),
                 {"tensor 't'", "run past the data section"});
    expect_error(one_tensor("[1]", "[0, 4]", 6),
                 {"take 4 bytes", "holds 6", "expected them equal"});
}

TEST_F(Safetensors, OverlappingRangesAndHolesAreErrors) {
    expect_error(write(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                       R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                       Bytes(12, 0)),
                 {"tensor 'b'", "overlap tensor 'a' at [0, 8]", "disjoint"});
    expect_error(write(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                       R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                       Bytes(12, 0)),
                 {"tensor 'b'", "leave bytes [4, 8] unused", "without holes"});
}

TEST_F(Safetensors, BoolBytesOtherThanZeroOrOneAreAnError) {
    const auto path =
        write(R"({"m": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}})", Bytes{0, 1, 2});
    expect_error(path, {"tensor 'm'", "BOOL element 2 is 2; expected 0 or 1"});
}

}  // namespace
}  // namespace kiln
