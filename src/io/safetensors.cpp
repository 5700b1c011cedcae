// Reading .safetensors files: the header checked whole against the file when opened, each
// tensor's bytes read and copied to a device on load (include/kiln/safetensors.hpp).
#include "kiln/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/checked_mul.hpp"
#include "kiln/error.hpp"

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; kiln reads it on little-endian hosts only");

using Json = nlohmann::json;

// The reference implementation's bound on the header: larger is not a model header.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A header nests three deep (the object of tensors, an entry, its shape or data offsets), and
// its arrays are shapes and offsets: the parser stops at the first value past these, so that a
// hostile header costs no more memory than a well-formed one of its size.
constexpr int kMaxHeaderDepth = 3;
constexpr int kMaxArrayLength = 64;

struct FormatDType {
    std::string_view name;
    size_t bytes;
    std::optional<DType> kiln;
};

constexpr FormatDType kFormatDTypes[] = {
    {"F32", 4, DType::f32},   {"F16", 2, DType::f16},       {"BF16", 2, DType::bf16},
    {"I64", 8, DType::i64},   {"I32", 4, DType::i32},       {"U32", 4, DType::u32},
    {"I8", 1, DType::i8},     {"U8", 1, DType::u8},         {"BOOL", 1, DType::boolean},
    {"F64", 8, std::nullopt}, {"I16", 2, std::nullopt},     {"U16", 2, std::nullopt},
    {"U64", 8, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

std::string format_dtype_names() {
    std::string out;
    for (const auto& d : kFormatDTypes) out += (out.empty() ? "" : " ") + std::string(d.name);
    return out;
}

const FormatDType* find_format_dtype(std::string_view name) {
    for (const auto& d : kFormatDTypes)
        if (d.name == name) return &d;
    return nullptr;
}

// A JSON value as an unsigned 64-bit integer, or nothing (negative, fractional, not a number).
std::optional<uint64_t> as_unsigned(const Json& v) {
    if (!v.is_number_unsigned()) return std::nullopt;
    return v.get<uint64_t>();
}

class HeaderReader {
  public:
    explicit HeaderReader(const std::filesystem::path& path) : path_(path.string()) {}

    [[noreturn]] void fail_file(const std::string& what) const {
        fail("safetensors {}: {}", path_, what);
    }
    [[noreturn]] void fail_tensor(const std::string& name, const std::string& what) const {
        fail("safetensors {}: tensor '{}': {}", path_, name, what);
    }

    Json parse(const std::string& text) const {
        std::set<std::string> seen;
        int array_length = 0;  // values so far in the innermost array open
        const Json::parser_callback_t checks = [&](int depth, Json::parse_event_t event,
                                                   Json& parsed) {
            using Event = Json::parse_event_t;
            // depth: the containers around the event (a container's start: those around it).
            if ((event == Event::object_start || event == Event::array_start) &&
                depth >= kMaxHeaderDepth)
                fail_file(
                    fmt::format("the header nests deeper than {} levels; expected an "
                                "object of tensors whose shapes and offsets are arrays",
                                kMaxHeaderDepth));
            if (event == Event::array_start) array_length = 0;
            if (event == Event::value && depth == kMaxHeaderDepth &&
                ++array_length > kMaxArrayLength)
                fail_file(
                    fmt::format("the header holds an array longer than {} values; "
                                "expected shapes and offsets",
                                kMaxArrayLength));
            if (event == Event::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second)
                fail_tensor(parsed.get<std::string>(), "named twice in the header");
            return true;
        };
        try {
            return Json::parse(text, checks);
        } catch (const Json::exception& e) {
            fail_file(fmt::format("the header is not valid JSON: {}", e.what()));
        }
    }

    std::map<std::string, std::string> metadata(const Json& v) const {
        if (!v.is_object())
            fail_file(
                fmt::format("__metadata__ is {}; expected an object of strings", v.type_name()));
        std::map<std::string, std::string> out;
        for (const auto& [key, value] : v.items()) {
            if (!value.is_string())
                fail_file(fmt::format("__metadata__ '{}' is {}; expected a string", key,
                                      value.type_name()));
            out[key] = value.get<std::string>();
        }
        return out;
    }

    SafetensorsEntry entry(const std::string& name, const Json& v) const {
        if (!v.is_object())
            fail_tensor(name, fmt::format("its header entry is {}; expected an object with "
                                          "dtype, shape and data_offsets",
                                          v.type_name()));
        for (const auto& [key, value] : v.items())
            if (key != "dtype" && key != "shape" && key != "data_offsets")
                fail_tensor(name, fmt::format("unknown field '{}'; expected dtype, shape and "
                                              "data_offsets",
                                              key));
        for (const char* field : {"dtype", "shape", "data_offsets"})
            if (!v.contains(field))
                fail_tensor(name, fmt::format("no '{}' field; expected dtype, shape and "
                                              "data_offsets",
                                              field));
        SafetensorsEntry e;
        e.name = name;
        const Json& dtype = v.at("dtype");
        if (!dtype.is_string())
            fail_tensor(name, fmt::format("dtype is {}; expected a string", dtype.type_name()));
        e.dtype_name = dtype.get<std::string>();
        const FormatDType* format = find_format_dtype(e.dtype_name);
        if (format == nullptr)
            fail_tensor(name, fmt::format("unknown dtype '{}'; expected one of {}", e.dtype_name,
                                          format_dtype_names()));
        e.dtype = format->kiln;

        const Json& shape = v.at("shape");
        if (!shape.is_array())
            fail_tensor(name, fmt::format("shape is {}; expected an array of non-negative "
                                          "integers",
                                          shape.type_name()));
        int64_t count = 1;
        for (const Json& extent : shape) {
            const auto x = as_unsigned(extent);
            if (!x || *x > uint64_t(INT64_MAX))
                fail_tensor(name, fmt::format("shape {} holds {}; expected non-negative "
                                              "integers below 2^63",
                                              shape.dump(), extent.dump()));
            e.shape.push_back(static_cast<int64_t>(*x));
            const auto product = checked_mul(count, static_cast<int64_t>(*x));
            if (!product)
                fail_tensor(name,
                            fmt::format("shape {} has more elements than 2^63", shape.dump()));
            count = *product;
        }
        const auto bytes = checked_mul(count, static_cast<int64_t>(format->bytes));
        if (!bytes)
            fail_tensor(name, fmt::format("shape {} of {} takes more bytes than 2^63", shape.dump(),
                                          e.dtype_name));

        const Json& offsets = v.at("data_offsets");
        const auto begin =
            offsets.is_array() && offsets.size() == 2 ? as_unsigned(offsets[0]) : std::nullopt;
        const auto end =
            offsets.is_array() && offsets.size() == 2 ? as_unsigned(offsets[1]) : std::nullopt;
        if (!begin || !end)
            fail_tensor(name, fmt::format("data_offsets {}; expected [begin, end], two "
                                          "non-negative integers",
                                          offsets.dump()));
        e.begin = *begin;
        e.end = *end;
        if (e.end < e.begin)
            fail_tensor(name, fmt::format("data_offsets [{}, {}] are reversed; expected begin "
                                          "<= end",
                                          e.begin, e.end));
        if (e.end - e.begin != static_cast<uint64_t>(*bytes))
            fail_tensor(name, fmt::format("data_offsets [{}, {}] hold {} bytes; shape {} of {} "
                                          "takes {}",
                                          e.begin, e.end, e.end - e.begin, shape.dump(),
                                          e.dtype_name, *bytes));
        return e;
    }

    // Ranges in bounds, in order, without overlap or holes, covering the data section (as the
    // format requires); `entries` ends sorted by position.
    void check_layout(std::vector<SafetensorsEntry>& entries, uint64_t data_bytes) const {
        std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
            return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
        });
        uint64_t cursor = 0;
        const SafetensorsEntry* previous = nullptr;
        for (const auto& e : entries) {
            if (e.end > data_bytes)
                fail_tensor(e.name, fmt::format("data_offsets [{}, {}] run past the data "
                                                "section's {} bytes (the file is truncated or "
                                                "the header wrong)",
                                                e.begin, e.end, data_bytes));
            if (e.begin < cursor)
                fail_tensor(e.name, fmt::format("data_offsets [{}, {}] overlap tensor '{}' at "
                                                "[{}, {}]; expected disjoint ranges",
                                                e.begin, e.end, previous->name, previous->begin,
                                                previous->end));
            if (e.begin > cursor)
                fail_tensor(e.name, fmt::format("data_offsets [{}, {}] leave bytes [{}, {}] "
                                                "unused; expected the ranges to cover the data "
                                                "section without holes",
                                                e.begin, e.end, cursor, e.begin));
            cursor = e.end;
            previous = &e;
        }
        if (cursor != data_bytes)
            fail_file(
                fmt::format("the tensors take {} bytes of data but the file holds {} after "
                            "the header; expected them equal",
                            cursor, data_bytes));
    }

  private:
    std::string path_;
};

}  // namespace

SafetensorsFile::SafetensorsFile(std::filesystem::path path) : path_(std::move(path)) {
    const HeaderReader reader(path_);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path_, ec))
        reader.fail_file("not a regular file (missing, or a directory)");
    const uint64_t file_bytes = std::filesystem::file_size(path_, ec);
    if (ec) reader.fail_file(fmt::format("cannot read its size: {}", ec.message()));
    std::ifstream in(path_, std::ios::binary);
    if (!in) reader.fail_file("cannot be opened for reading");
    if (file_bytes < 8)
        reader.fail_file(
            fmt::format("{} bytes; expected at least 8 (the header length)", file_bytes));
    uint8_t length_bytes[8];
    if (!in.read(reinterpret_cast<char*>(length_bytes), 8))
        reader.fail_file("cannot read the header length");
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | length_bytes[i];
    if (header_bytes > kMaxHeaderBytes)
        reader.fail_file(fmt::format("header length {} is absurd; expected at most {}",
                                     header_bytes, kMaxHeaderBytes));
    if (header_bytes > file_bytes - 8)
        reader.fail_file(
            fmt::format("header length {} runs past the file's end ({} bytes after "
                        "the length)",
                        header_bytes, file_bytes - 8));
    std::string text(header_bytes, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(header_bytes)))
        reader.fail_file("cannot read the header (the file shrank while being read?)");
    const Json header = reader.parse(text);
    if (!header.is_object())
        reader.fail_file(
            fmt::format("the header is {}; expected a JSON object of tensors", header.type_name()));
    data_start_ = 8 + header_bytes;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__")
            metadata_ = reader.metadata(value);
        else
            entries_.push_back(reader.entry(name, value));
    }
    reader.check_layout(entries_, file_bytes - data_start_);
    for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].name, i);
}

bool SafetensorsFile::contains(std::string_view name) const {
    return index_.find(name) != index_.end();
}

const SafetensorsEntry& SafetensorsFile::entry(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end())
        fail("safetensors {}: no tensor named '{}' (the file holds {})", path_.string(), name,
             entries_.size());
    return entries_[it->second];
}

Tensor SafetensorsFile::load(std::string_view name, Device& device) const {
    const SafetensorsEntry& e = entry(name);
    if (!e.dtype)
        fail(
            "safetensors {}: tensor '{}': dtype {} has no kiln dtype; expected one of F32 F16 "
            "BF16 I64 I32 U32 I8 U8 BOOL",
            path_.string(), e.name, e.dtype_name);
    const uint64_t bytes = e.end - e.begin;
    std::vector<uint8_t> data(bytes);
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(data_start_ + e.begin));
    if (!in || !in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes)))
        fail(
            "safetensors {}: tensor '{}': cannot read its {} bytes at offset {} (the file "
            "changed or shrank since it was opened)",
            path_.string(), e.name, bytes, data_start_ + e.begin);
    if (*e.dtype == DType::boolean) {
        const auto bad = std::find_if(data.begin(), data.end(), [](uint8_t b) { return b > 1; });
        if (bad != data.end())
            fail("safetensors {}: tensor '{}': BOOL element {} is {}; expected 0 or 1",
                 path_.string(), e.name, bad - data.begin(), *bad);
    }
    return Tensor::from_bytes(data.data(), bytes / size_of(*e.dtype), *e.dtype, e.shape, device);
}

std::map<std::string, Tensor> SafetensorsFile::load_all(Device& device) const {
    std::map<std::string, Tensor> out;
    for (const auto& e : entries_) out.emplace(e.name, load(e.name, device));
    return out;
}

std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path, Device& device) {
    return SafetensorsFile(path).load_all(device);
}

}  // namespace kiln
