// Reading GGUF files (llama.cpp's format, versions 2 and 3): a little-endian header ("GGUF",
// version, tensor and metadata counts), typed metadata (key -> value), tensor infos (name,
// dimensions, ggml type, offset) and, after padding to the file's alignment, the tensors' data.
// Opening a file checks all of it against the file before anything is sized from it: counts,
// strings and arrays within what the file holds, known types, each tensor's first dimension a
// whole number of its type's blocks, offsets aligned, data inside the file and not overlapping,
// names and keys unique. Memory stays proportional to the file's metadata (arrays of arrays are
// refused). A truncated, malformed or hostile file is a kiln::Error naming the file and what was
// expected, never a read past the file.
//
//   GgufFile file("model.gguf");
//   int64_t layers = file.value("gemma3.block_count").as_int();
//   std::vector<uint8_t> q4 = file.tensor_bytes("blk.0.attn_q.weight");   // Q4_K blocks
//   Tensor norm = file.load("blk.0.attn_norm.weight", device);            // f32
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

// ggml's tensor types that GGUF files hold (the value is the file's).
enum class GgufType : uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    bf16 = 30,
};
const char* name(GgufType type);  // "F32", "Q4_K", ...
// Values per block and bytes per block (1 and the element size for the plain types).
int64_t gguf_block_values(GgufType type);
int64_t gguf_block_bytes(GgufType type);

// One metadata value: a scalar, a string, or an array of scalars or strings.
class GgufValue {
  public:
    enum class Kind : uint32_t {
        u8 = 0,
        i8 = 1,
        u16 = 2,
        i16 = 3,
        u32 = 4,
        i32 = 5,
        f32 = 6,
        boolean = 7,
        string = 8,
        array = 9,
        u64 = 10,
        i64 = 11,
        f64 = 12,
    };
    Kind kind() const { return kind_; }
    Kind element_kind() const { return element_; }  // an array's elements
    uint64_t size() const { return count_; }        // an array's length (1 for a scalar)

    // The value as the caller's type; kiln::Error naming `what` (the key) when it is another
    // kind: integers as int64 (a u64 above INT64_MAX is an error), floats as double.
    int64_t as_int(std::string_view what = "value") const;
    double as_float(std::string_view what = "value") const;
    bool as_bool(std::string_view what = "value") const;
    const std::string& as_string(std::string_view what = "value") const;
    std::vector<int64_t> as_ints(std::string_view what = "value") const;
    std::vector<double> as_floats(std::string_view what = "value") const;
    const std::vector<std::string>& as_strings(std::string_view what = "value") const;

  private:
    friend class GgufFile;
    Kind kind_ = Kind::u8;
    Kind element_ = Kind::u8;
    uint64_t count_ = 1;
    std::string raw_;                   // scalars and numeric arrays, little-endian
    std::string string_;                // a string
    std::vector<std::string> strings_;  // an array of strings
};
const char* name(GgufValue::Kind kind);  // "u8", "string", "array", ...

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> dims;  // ggml's order: dims[0] varies fastest
    GgufType type = GgufType::f32;
    uint64_t offset = 0;  // in the file
    uint64_t bytes = 0;
    Shape shape() const;  // row-major: dims reversed
};

// A block format's tensor in the planar form dequantize_blocks reads (kiln/tensor.hpp): values
// i8 with the tensor's shape, scales f32 [..., k/block], and mins of that shape for the formats
// with mins (Q4_K). dequantize_blocks(values, scales, mins) is GgufFile::dequantize's value bit
// for bit; the planar form holds 8 bits a value and 4 bytes a block.
struct GgufBlocks {
    Tensor values, scales;
    std::optional<Tensor> mins;
};

class GgufFile {
  public:
    // Reads and checks the header, the metadata and the tensor infos; data is read on demand.
    explicit GgufFile(std::filesystem::path path);

    const std::filesystem::path& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
    bool has(std::string_view key) const;
    const GgufValue& value(std::string_view key) const;  // kiln::Error naming the key if absent
    // Every tensor, in the order of their infos in the file.
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo& tensor(std::string_view name) const;  // kiln::Error when absent

    // A tensor's bytes as stored (quantized blocks as they are).
    std::vector<uint8_t> tensor_bytes(std::string_view name) const;
    // A tensor on `device`: F32, F16, BF16, I8, I32 and I64 as that dtype with shape(); the
    // block formats as u8 rows of their blocks, shape() with its last axis in bytes. F64 and I16
    // are a kiln::Error naming the type.
    Tensor load(std::string_view name, Device& device = cpu_device()) const;
    // A tensor's values in f32 on the host, row-major: F32, F16, BF16 exactly, and the block
    // formats Q4_0, Q5_0, Q8_0, Q4_K and Q6_K dequantized in each format's defined arithmetic
    // (src/oracle/quant_blocks.hpp, the values of llama.cpp's reference rows). Other types are a
    // kiln::Error naming the type.
    std::vector<float> dequantize(std::string_view name) const;
    // A tensor of a block format kiln dequantizes (Q4_0, Q5_0, Q8_0, Q4_K, Q6_K) as planar
    // tensors on `device`; other types are a kiln::Error naming the type.
    GgufBlocks load_blocks(std::string_view name, Device& device = cpu_device()) const;

  private:
    std::filesystem::path path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::map<std::string, GgufValue, std::less<>> metadata_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace kiln
