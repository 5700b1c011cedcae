// Buffer: typed device memory. Every host<->device step checks the element type and count.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/error.hpp"

namespace kiln {

// Host types for the 16-bit storage floats: their raw bits.
struct Half {
    uint16_t bits;
    bool operator==(const Half&) const = default;
};
struct BFloat16 {
    uint16_t bits;
    bool operator==(const BFloat16&) const = default;
};
template <>
struct dtype_of<Half> {
    static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<BFloat16> {
    static constexpr DType value = DType::bf16;
};

class Buffer {
  public:
    Buffer(Device& device, DType dtype, size_t count);
    // `count` elements of `dtype` in existing memory of `device` (Device::wrap); the memory must
    // hold at least that many bytes.
    Buffer(Device& device, DType dtype, size_t count, std::shared_ptr<DeviceMemory> memory);

    Device& device() const { return *device_; }
    DType dtype() const { return dtype_; }
    size_t count() const { return count_; }
    size_t bytes() const { return count_ * size_of(dtype_); }
    const DeviceMemory& memory() const { return *memory_; }
    DeviceMemory& memory() { return *memory_; }

    // Raw transfers: `dtype` and `count` must be the buffer's.
    void upload_raw(const void* data, DType dtype, size_t count);
    void download_raw(void* data, DType dtype, size_t count) const;

    template <typename T>
    void upload(std::span<const T> values) {
        upload_raw(values.data(), dtype_of<T>::value, values.size());
    }
    template <typename T>
    void upload(const std::vector<T>& values) {
        upload(std::span<const T>(values));
    }
    template <typename T>
    std::vector<T> download() const {
        std::vector<T> out(count_);
        download_raw(out.data(), dtype_of<T>::value, out.size());
        return out;
    }
    // Raw bytes of all elements, whatever the dtype.
    std::vector<uint8_t> download_bytes() const;
    void upload_bytes(std::span<const uint8_t> bytes);

    // Sets every element to `value`, converted to the buffer's dtype by kiln's cast rules.
    void fill(double value);

    // The same memory seen as elements of another dtype (e.g. packed int8 blocks read as u32
    // words). The byte size must be a multiple of the new element size.
    Buffer view(DType dtype) const;

  private:
    Device* device_;
    DType dtype_;
    size_t count_;
    std::shared_ptr<DeviceMemory> memory_;
};

}  // namespace kiln
