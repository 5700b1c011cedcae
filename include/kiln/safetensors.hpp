// Reading .safetensors files (the format of Hugging Face's `safetensors`): an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape and byte range,
// then the raw little-endian data. Opening a file checks the whole header against the file
// (lengths, fields, shapes, ranges in bounds, in order, without overlap or holes, each the size
// its shape and dtype need); loading copies a tensor's bytes onto a device as a kiln::Tensor.
//
//   SafetensorsFile file("model.safetensors");
//   Tensor w = file.load("encoder.layer.0.output.dense.weight", device);
//
// A file that is truncated, malformed or hostile gives a kiln::Error naming the file, the tensor
// and what was expected, never a read past the file. dtypes kiln has (F32 F16 BF16 I64 I32 U32
// I8 U8 BOOL) load; the format's others (F64, I16, U16, U64, the F8 kinds) are described but
// loading one is a kiln::Error naming it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

struct SafetensorsEntry {
    std::string name;
    std::string dtype_name;      // as the file spells it: "F32", "BF16", "I64", ...
    std::optional<DType> dtype;  // kiln's dtype, when kiln has it
    Shape shape;
    uint64_t begin = 0, end = 0;  // byte range within the data section
};

class SafetensorsFile {
  public:
    // Reads and checks the header; the data is read by load().
    explicit SafetensorsFile(std::filesystem::path path);

    const std::filesystem::path& path() const { return path_; }
    // Every tensor, in the order of their data in the file.
    const std::vector<SafetensorsEntry>& entries() const { return entries_; }
    // The header's "__metadata__" (string to string), empty when absent.
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    bool contains(std::string_view name) const;
    const SafetensorsEntry& entry(std::string_view name) const;  // kiln::Error when absent

    // One tensor's data on `device`.
    Tensor load(std::string_view name, Device& device = cpu_device()) const;
    // Every tensor, by name.
    std::map<std::string, Tensor> load_all(Device& device = cpu_device()) const;

  private:
    std::filesystem::path path_;
    uint64_t data_start_ = 0;  // file offset of the data section
    std::vector<SafetensorsEntry> entries_;
    std::map<std::string, size_t, std::less<>> index_;
    std::map<std::string, std::string> metadata_;
};

// Every tensor of the file at `path`, on `device`.
std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path,
                                               Device& device = cpu_device());

}  // namespace kiln
