// Buffer: typed, checked transfers over a device's raw memory.
#include "kiln/buffer.hpp"

#include <cmath>
#include <cstring>
#include <utility>

#include "kiln/semantics.hpp"

namespace kiln {

Buffer::Buffer(Device& device, DType dtype, size_t count)
    : device_(&device), dtype_(dtype), count_(count) {
    if (count > (size_t{1} << 40) / size_of(dtype))
        fail("buffer of {} {} elements is larger than kiln supports", count, name(dtype));
    memory_ = device.allocate(bytes());
}

Buffer::Buffer(Device& device, DType dtype, size_t count, std::shared_ptr<DeviceMemory> memory)
    : device_(&device), dtype_(dtype), count_(count), memory_(std::move(memory)) {
    if (!memory_) fail("buffer of {} {} elements: no memory given", count, name(dtype));
    if (count > memory_->bytes() / size_of(dtype))
        fail("buffer of {} {} elements over memory of {} bytes; expected memory at least as large",
             count, name(dtype), memory_->bytes());
}

void Buffer::upload_raw(const void* data, DType dtype, size_t count) {
    if (dtype != dtype_)
        fail("upload of {} data into a {} buffer; expected {} elements of {}", name(dtype),
             name(dtype_), count_, name(dtype_));
    if (count != count_)
        fail("upload of {} elements into a buffer of {} {} elements; sizes must match", count,
             count_, name(dtype_));
    if (count) device_->write(*memory_, 0, data, bytes());
}

void Buffer::download_raw(void* data, DType dtype, size_t count) const {
    if (dtype != dtype_)
        fail("download of a {} buffer as {}; expected {}", name(dtype_), name(dtype), name(dtype_));
    if (count != count_)
        fail("download of {} elements from a buffer of {} elements; sizes must match", count,
             count_);
    if (count) device_->read(*memory_, 0, data, bytes());
}

std::vector<uint8_t> Buffer::download_bytes() const {
    std::vector<uint8_t> out(bytes());
    if (!out.empty()) device_->read(*memory_, 0, out.data(), out.size());
    return out;
}

void Buffer::upload_bytes(std::span<const uint8_t> data) {
    if (data.size() != bytes())
        fail("upload of {} bytes into a buffer of {} bytes ({} x {}); sizes must match",
             data.size(), bytes(), count_, name(dtype_));
    if (!data.empty()) device_->write(*memory_, 0, data.data(), data.size());
}

Buffer Buffer::view(DType dtype) const {
    if (bytes() % size_of(dtype) != 0)
        fail("view of a {}-byte {} buffer as {}: the size is not a multiple of {} bytes", bytes(),
             name(dtype_), name(dtype), size_of(dtype));
    Buffer v = *this;
    v.dtype_ = dtype;
    v.count_ = bytes() / size_of(dtype);
    return v;
}

void Buffer::fill(double value) {
    uint64_t pattern = 0;
    const float f = static_cast<float>(value);
    switch (dtype_) {
        case DType::f32:
            std::memcpy(&pattern, &f, 4);
            break;
        case DType::f16:
            pattern = semantics::f32_to_f16(f);
            break;
        case DType::bf16:
            pattern = semantics::f32_to_bf16(f);
            break;
        case DType::boolean:
            pattern = value != 0 ? 1 : 0;
            break;
        default: {
            const bool in_range =
                std::floor(value) == value &&
                (dtype_ == DType::i8    ? value >= -128 && value <= 127
                 : dtype_ == DType::u8  ? value >= 0 && value <= 255
                 : dtype_ == DType::i32 ? value >= INT32_MIN && value <= INT32_MAX
                 : dtype_ == DType::u32 ? value >= 0 && value <= UINT32_MAX
                                        : std::fabs(value) <= 9.007199254740992e15);
            if (!in_range)
                fail("fill of a {} buffer with {}: not a value of that type", name(dtype_), value);
            const auto i = static_cast<int64_t>(value);
            std::memcpy(&pattern, &i, 8);
        }
    }
    if (count_) device_->fill(*memory_, &pattern, size_of(dtype_));
}

}  // namespace kiln
