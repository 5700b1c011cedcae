// GgufFile (kiln/gguf.hpp): the header, metadata and tensor infos read through a bounded cursor
// over the file, every count and length checked against the bytes left before it sizes anything.
#include "kiln/gguf.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "cache/regular_file.hpp"
#include "kiln/error.hpp"
#include "oracle/quant_blocks.hpp"

namespace kiln {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxDims = 4;              // ggml's GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;

// Each type's blocks, and what kiln loads it as: a plain type as its dtype, a block format as u8
// (its blocks' bytes); none for the plain types kiln has no dtype for.
struct TypeRow {
    GgufType type;
    const char* name;
    int64_t block_values, block_bytes;
    std::optional<DType> dtype;
    std::optional<oracle::QuantFormat> format;  // how the host dequantizes it
};
constexpr auto u8 = DType::u8;
constexpr TypeRow kTypes[] = {
    {GgufType::f32, "F32", 1, 4, DType::f32, oracle::QuantFormat::f32},
    {GgufType::f16, "F16", 1, 2, DType::f16, oracle::QuantFormat::f16},
    {GgufType::q4_0, "Q4_0", 32, 18, u8, oracle::QuantFormat::q4_0},
    {GgufType::q4_1, "Q4_1", 32, 20, u8, std::nullopt},
    {GgufType::q5_0, "Q5_0", 32, 22, u8, oracle::QuantFormat::q5_0},
    {GgufType::q5_1, "Q5_1", 32, 24, u8, std::nullopt},
    {GgufType::q8_0, "Q8_0", 32, 34, u8, oracle::QuantFormat::q8_0},
    {GgufType::q8_1, "Q8_1", 32, 36, u8, std::nullopt},
    {GgufType::q2_k, "Q2_K", 256, 84, u8, std::nullopt},
    {GgufType::q3_k, "Q3_K", 256, 110, u8, std::nullopt},
    {GgufType::q4_k, "Q4_K", 256, 144, u8, oracle::QuantFormat::q4_k},
    {GgufType::q5_k, "Q5_K", 256, 176, u8, std::nullopt},
    {GgufType::q6_k, "Q6_K", 256, 210, u8, oracle::QuantFormat::q6_k},
    {GgufType::q8_k, "Q8_K", 256, 292, u8, std::nullopt},
    {GgufType::i8, "I8", 1, 1, DType::i8, std::nullopt},
    {GgufType::i16, "I16", 1, 2, std::nullopt, std::nullopt},
    {GgufType::i32, "I32", 1, 4, DType::i32, std::nullopt},
    {GgufType::i64, "I64", 1, 8, DType::i64, std::nullopt},
    {GgufType::f64, "F64", 1, 8, std::nullopt, std::nullopt},
    {GgufType::bf16, "BF16", 1, 2, DType::bf16, oracle::QuantFormat::bf16},
};

const TypeRow* find_type(uint32_t value) {
    for (const TypeRow& row : kTypes)
        if (static_cast<uint32_t>(row.type) == value) return &row;
    return nullptr;
}

const TypeRow& type_row(GgufType type) {
    const TypeRow* row = find_type(static_cast<uint32_t>(type));
    if (row == nullptr) fail("internal: GGUF type {} has no row", static_cast<uint32_t>(type));
    return *row;
}

// Bytes of one scalar of `kind` (0 for strings and arrays).
uint64_t scalar_bytes(GgufValue::Kind kind) {
    using K = GgufValue::Kind;
    switch (kind) {
        case K::u8:
        case K::i8:
        case K::boolean:
            return 1;
        case K::u16:
        case K::i16:
            return 2;
        case K::u32:
        case K::i32:
        case K::f32:
            return 4;
        case K::u64:
        case K::i64:
        case K::f64:
            return 8;
        case K::string:
        case K::array:
            return 0;
    }
    return 0;
}

bool is_kind(uint32_t v) {
    return v <= static_cast<uint32_t>(GgufValue::Kind::f64);
}

// Reads the file front to back through a buffer; every read is checked against the file's size.
class Cursor {
  public:
    Cursor(const std::filesystem::path& path, int fd, uint64_t size)
        : path_(path), fd_(fd), size_(size) {}

    uint64_t position() const { return pos_; }
    uint64_t left() const { return size_ - pos_; }

    [[noreturn]] void bad(const std::string& what) const {
        fail("GGUF file {}: {} (at byte {} of {})", path_.string(), what, pos_, size_);
    }

    void read(void* out, uint64_t n, std::string_view what) {
        if (n > left())
            bad(fmt::format("{} needs {} bytes, {} are left; expected a whole file", what, n,
                            left()));
        auto* dst = static_cast<char*>(out);
        while (n > 0) {
            if (buf_pos_ == buf_.size()) fill();
            const uint64_t take = std::min<uint64_t>(n, buf_.size() - buf_pos_);
            std::memcpy(dst, buf_.data() + buf_pos_, take);
            buf_pos_ += take;
            pos_ += take;
            dst += take;
            n -= take;
        }
    }
    template <typename T>
    T scalar(std::string_view what) {
        T v;
        read(&v, sizeof v, what);
        return v;
    }
    std::string string(std::string_view what) {
        const auto n = scalar<uint64_t>(what);
        if (n > left())
            bad(fmt::format("{} is {} bytes long, {} are left; expected a string within the file",
                            what, n, left()));
        std::string s(n, '\0');
        read(s.data(), n, what);
        return s;
    }

  private:
    void fill() {
        buf_.resize(static_cast<size_t>(std::min<uint64_t>(1 << 16, left())));
        size_t got = 0;
        while (got < buf_.size()) {
            const ssize_t r =
                ::pread(fd_, buf_.data() + got, buf_.size() - got, static_cast<off_t>(pos_ + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) bad(r < 0 ? std::strerror(errno) : "the file shrank while being read");
            got += static_cast<size_t>(r);
        }
        buf_pos_ = 0;
    }

    const std::filesystem::path& path_;
    int fd_;
    uint64_t size_, pos_ = 0;
    std::vector<char> buf_;
    size_t buf_pos_ = 0;
};

// Opens the file (following links: model files often live behind them) without blocking on a
// FIFO, and checks that it is a regular file.
cache::FileDescriptor open_file(const std::filesystem::path& path, uint64_t& size) {
    cache::FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) fail("GGUF file {}: cannot open it: {}", path.string(), std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        fail("GGUF file {}: cannot stat it: {}", path.string(), std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        fail("GGUF file {}: not a regular file; expected a GGUF file", path.string());
    size = static_cast<uint64_t>(st.st_size);
    return fd;
}

}  // namespace

const char* name(GgufType type) {
    return type_row(type).name;
}
int64_t gguf_block_values(GgufType type) {
    return type_row(type).block_values;
}
int64_t gguf_block_bytes(GgufType type) {
    return type_row(type).block_bytes;
}

const char* name(GgufValue::Kind kind) {
    static constexpr const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                            "bool", "string", "array", "u64", "i64", "f64"};
    return names[static_cast<uint32_t>(kind)];
}

namespace {

// The integer at `raw` of `kind` as int64 (a u64 beyond INT64_MAX fails with `what`).
int64_t integer_at(const char* raw, GgufValue::Kind kind, std::string_view what) {
    using K = GgufValue::Kind;
    const auto get = [&](auto v) {
        std::memcpy(&v, raw, sizeof v);
        return v;
    };
    switch (kind) {
        case K::u8:
            return get(uint8_t{});
        case K::i8:
            return get(int8_t{});
        case K::u16:
            return get(uint16_t{});
        case K::i16:
            return get(int16_t{});
        case K::u32:
            return get(uint32_t{});
        case K::i32:
            return get(int32_t{});
        case K::i64:
            return get(int64_t{});
        case K::u64: {
            const uint64_t v = get(uint64_t{});
            if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail("GGUF {}: {} does not fit an int64", what, v);
            return static_cast<int64_t>(v);
        }
        default:
            fail("GGUF {}: a {}; expected an integer", what, name(kind));
    }
}

double float_at(const char* raw, GgufValue::Kind kind, std::string_view what) {
    if (kind == GgufValue::Kind::f32) {
        float v;
        std::memcpy(&v, raw, sizeof v);
        return v;
    }
    if (kind == GgufValue::Kind::f64) {
        double v;
        std::memcpy(&v, raw, sizeof v);
        return v;
    }
    fail("GGUF {}: a {}; expected a float", what, name(kind));
}

}  // namespace

int64_t GgufValue::as_int(std::string_view what) const {
    if (kind_ == Kind::array || kind_ == Kind::string)
        fail("GGUF {}: a {}; expected an integer", what, name(kind_));
    return integer_at(raw_.data(), kind_, what);
}

double GgufValue::as_float(std::string_view what) const {
    if (kind_ == Kind::array || kind_ == Kind::string)
        fail("GGUF {}: a {}; expected a float", what, name(kind_));
    return float_at(raw_.data(), kind_, what);
}

bool GgufValue::as_bool(std::string_view what) const {
    if (kind_ != Kind::boolean) fail("GGUF {}: a {}; expected a bool", what, name(kind_));
    return raw_[0] != 0;
}

const std::string& GgufValue::as_string(std::string_view what) const {
    if (kind_ != Kind::string) fail("GGUF {}: a {}; expected a string", what, name(kind_));
    return string_;
}

std::vector<int64_t> GgufValue::as_ints(std::string_view what) const {
    if (kind_ != Kind::array || element_ == Kind::string)
        fail("GGUF {}: a {}; expected an array of integers", what, name(kind_));
    std::vector<int64_t> out(count_);
    const uint64_t step = scalar_bytes(element_);
    for (uint64_t i = 0; i < count_; ++i)
        out[i] = integer_at(raw_.data() + i * step, element_, what);
    return out;
}

std::vector<double> GgufValue::as_floats(std::string_view what) const {
    if (kind_ != Kind::array || element_ == Kind::string)
        fail("GGUF {}: a {}; expected an array of floats", what, name(kind_));
    std::vector<double> out(count_);
    const uint64_t step = scalar_bytes(element_);
    for (uint64_t i = 0; i < count_; ++i) out[i] = float_at(raw_.data() + i * step, element_, what);
    return out;
}

const std::vector<std::string>& GgufValue::as_strings(std::string_view what) const {
    if (kind_ != Kind::array || element_ != Kind::string)
        fail("GGUF {}: a {}; expected an array of strings", what, name(kind_));
    return strings_;
}

Shape GgufTensorInfo::shape() const {
    return Shape(dims.rbegin(), dims.rend());
}

GgufFile::GgufFile(std::filesystem::path path) : path_(std::move(path)) {
    uint64_t size = 0;
    const cache::FileDescriptor fd = open_file(path_, size);
    Cursor in(path_, fd.get(), size);
    if (in.scalar<uint32_t>("the magic") != kMagic)
        in.bad("the first four bytes are not \"GGUF\"; expected a GGUF file");
    version_ = in.scalar<uint32_t>("the version");
    if (version_ != 2 && version_ != 3)
        in.bad(fmt::format("version {}; expected 2 or 3", version_));
    const auto tensor_count = in.scalar<uint64_t>("the tensor count");
    const auto kv_count = in.scalar<uint64_t>("the metadata count");
    // The smallest metadata entry (an empty key and a u8) is 13 bytes, a tensor info 24.
    if (kv_count > in.left() / 13)
        in.bad(fmt::format("{} metadata entries cannot fit in the {} bytes left", kv_count,
                           in.left()));
    if (tensor_count > in.left() / 24)
        in.bad(fmt::format("{} tensors cannot fit in the {} bytes left", tensor_count, in.left()));

    for (uint64_t e = 0; e < kv_count; ++e) {
        std::string key = in.string("a metadata key");
        if (metadata_.count(key)) in.bad(fmt::format("the metadata key '{}' appears twice", key));
        GgufValue v;
        const auto kind = in.scalar<uint32_t>("a value's type");
        if (!is_kind(kind))
            in.bad(fmt::format("'{}' has value type {}; expected 0 to 12", key, kind));
        v.kind_ = static_cast<GgufValue::Kind>(kind);
        if (v.kind_ == GgufValue::Kind::string) {
            v.string_ = in.string(key);
        } else if (v.kind_ == GgufValue::Kind::array) {
            const auto element = in.scalar<uint32_t>("an array's element type");
            if (!is_kind(element))
                in.bad(fmt::format("'{}' is an array of type {}; expected 0 to 12", key, element));
            v.element_ = static_cast<GgufValue::Kind>(element);
            if (v.element_ == GgufValue::Kind::array)
                in.bad(fmt::format("'{}' is an array of arrays, which kiln does not read", key));
            v.count_ = in.scalar<uint64_t>("an array's length");
            const uint64_t step =
                v.element_ == GgufValue::Kind::string ? 8 : scalar_bytes(v.element_);
            if (v.count_ > in.left() / step)
                in.bad(fmt::format("'{}' has {} elements of at least {} bytes; {} bytes are left",
                                   key, v.count_, step, in.left()));
            if (v.element_ == GgufValue::Kind::string) {
                v.strings_.reserve(v.count_);
                for (uint64_t i = 0; i < v.count_; ++i) v.strings_.push_back(in.string(key));
            } else {
                v.raw_.resize(v.count_ * step);
                in.read(v.raw_.data(), v.raw_.size(), key);
            }
        } else {
            v.raw_.resize(scalar_bytes(v.kind_));
            in.read(v.raw_.data(), v.raw_.size(), key);
        }
        metadata_.emplace(std::move(key), std::move(v));
    }
    if (const auto it = metadata_.find("general.alignment"); it != metadata_.end()) {
        if (it->second.kind() != GgufValue::Kind::u32)
            in.bad(
                fmt::format("general.alignment is a {}; expected a u32", name(it->second.kind())));
        alignment_ = static_cast<uint64_t>(it->second.as_int());
        if (alignment_ == 0 || !std::has_single_bit(alignment_))
            in.bad(fmt::format("general.alignment is {}; expected a power of two", alignment_));
    }

    for (uint64_t t = 0; t < tensor_count; ++t) {
        GgufTensorInfo info;
        info.name = in.string("a tensor's name");
        if (index_.count(info.name))
            in.bad(fmt::format("the tensor '{}' appears twice", info.name));
        const auto n_dims = in.scalar<uint32_t>("a tensor's rank");
        if (n_dims < 1 || n_dims > kMaxDims)
            in.bad(fmt::format("tensor '{}' has {} dimensions; expected 1 to {}", info.name, n_dims,
                               kMaxDims));
        uint64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const auto extent = in.scalar<uint64_t>("a tensor's dimension");
            if (extent < 1 || extent > (uint64_t{1} << 62) / elements)
                in.bad(
                    fmt::format("tensor '{}' has dimension {} of {}; expected 1 or more, the "
                                "product within 2^62",
                                info.name, d, extent));
            elements *= extent;
            info.dims.push_back(static_cast<int64_t>(extent));
        }
        const auto type = in.scalar<uint32_t>("a tensor's type");
        const TypeRow* row = find_type(type);
        if (row == nullptr)
            in.bad(fmt::format("tensor '{}' has ggml type {}, which kiln does not know", info.name,
                               type));
        info.type = row->type;
        if (info.dims[0] % row->block_values != 0)
            in.bad(
                fmt::format("tensor '{}' of type {} has a first dimension of {}; expected a "
                            "multiple of its blocks' {} values",
                            info.name, row->name, info.dims[0], row->block_values));
        info.bytes = elements / static_cast<uint64_t>(row->block_values) *
                     static_cast<uint64_t>(row->block_bytes);
        info.offset = in.scalar<uint64_t>("a tensor's offset");
        if (info.offset % alignment_ != 0)
            in.bad(
                fmt::format("tensor '{}' starts at data offset {}; expected a multiple of the "
                            "alignment {}",
                            info.name, info.offset, alignment_));
        index_.emplace(info.name, tensors_.size());
        tensors_.push_back(std::move(info));
    }
    const uint64_t data_start = (in.position() + alignment_ - 1) / alignment_ * alignment_;
    std::vector<const GgufTensorInfo*> by_offset;
    for (GgufTensorInfo& info : tensors_) {
        if (info.offset > size || data_start > size - info.offset ||
            info.bytes > size - info.offset - data_start)
            fail(
                "GGUF file {}: tensor '{}' ({} bytes at data offset {}) ends past the file's {} "
                "bytes; expected its data inside the file",
                path_.string(), info.name, info.bytes, info.offset, size);
        info.offset += data_start;
        by_offset.push_back(&info);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
            fail(
                "GGUF file {}: the data of tensors '{}' and '{}' overlap; expected each its own "
                "bytes",
                path_.string(), by_offset[i - 1]->name, by_offset[i]->name);
}

bool GgufFile::has(std::string_view key) const {
    return metadata_.find(key) != metadata_.end();
}

const GgufValue& GgufFile::value(std::string_view key) const {
    const auto it = metadata_.find(key);
    if (it == metadata_.end()) fail("GGUF file {}: no metadata key '{}'", path_.string(), key);
    return it->second;
}

const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) fail("GGUF file {}: no tensor '{}'", path_.string(), name);
    return tensors_[it->second];
}

std::vector<uint8_t> GgufFile::tensor_bytes(std::string_view name) const {
    const GgufTensorInfo& info = tensor(name);
    uint64_t size = 0;
    const cache::FileDescriptor fd = open_file(path_, size);
    if (info.offset + info.bytes > size)
        fail(
            "GGUF file {}: tensor '{}' ends past the file's {} bytes (it shrank since it was "
            "opened)",
            path_.string(), info.name, size);
    std::vector<uint8_t> out(info.bytes);
    size_t got = 0;
    while (got < out.size()) {
        const ssize_t r = ::pread(fd.get(), out.data() + got, out.size() - got,
                                  static_cast<off_t>(info.offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            fail("GGUF file {}: cannot read tensor '{}': {}", path_.string(), info.name,
                 r < 0 ? std::strerror(errno) : "the file shrank");
        got += static_cast<size_t>(r);
    }
    return out;
}

std::vector<float> GgufFile::dequantize(std::string_view name) const {
    const GgufTensorInfo& info = tensor(name);
    const TypeRow& row = type_row(info.type);
    if (!row.format)
        fail(
            "GGUF file {}: tensor '{}' is {}; kiln dequantizes F32, F16, BF16, Q4_0, Q5_0, Q8_0, "
            "Q4_K and Q6_K",
            path_.string(), info.name, row.name);
    return oracle::dequantize(*row.format, tensor_bytes(name));
}

GgufBlocks GgufFile::load_blocks(std::string_view name, Device& device) const {
    const GgufTensorInfo& info = tensor(name);
    const TypeRow& row = type_row(info.type);
    if (!row.format || row.block_values == 1)
        fail(
            "GGUF file {}: tensor '{}' is {}; kiln loads the block formats Q4_0, Q5_0, Q8_0, Q4_K "
            "and Q6_K as planar blocks (a plain type loads with load)",
            path_.string(), info.name, row.name);
    const oracle::PlanarBlocks p = oracle::planar(*row.format, tensor_bytes(name));
    const Shape shape = info.shape();
    Shape blocks = shape;
    blocks.back() /= p.block;
    GgufBlocks out{Tensor::from_bytes(p.values.data(), p.values.size(), DType::i8, shape, device),
                   Tensor::from_host(p.scales, blocks, device), std::nullopt};
    if (!p.mins.empty()) out.mins = Tensor::from_host(p.mins, blocks, device);
    return out;
}

Tensor GgufFile::load(std::string_view name, Device& device) const {
    const GgufTensorInfo& info = tensor(name);
    const TypeRow& row = type_row(info.type);
    if (!row.dtype)
        fail("GGUF file {}: tensor '{}' is {}, which kiln has no dtype for", path_.string(),
             info.name, row.name);
    Shape shape = info.shape();
    shape.back() =
        shape.back() / row.block_values * (*row.dtype == DType::u8 ? row.block_bytes : 1);
    const std::vector<uint8_t> bytes = tensor_bytes(name);
    return Tensor::from_bytes(bytes.data(), bytes.size() / size_of(*row.dtype), *row.dtype, shape,
                              device);
}

}  // namespace kiln
