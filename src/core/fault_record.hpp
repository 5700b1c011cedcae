// FaultRecord: the host side of checked mode (ir/check_bounds.hpp). Each checked compiled kernel
// owns one record in device memory, passed as its last argument; after a launch the record is read
// back and a recorded fault becomes a kiln::Error naming the kernel, the memory, the index and the
// length. The record is cleared then, so the kernel and the device stay usable.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "kiln/device.hpp"
#include "kiln/ir.hpp"

namespace kiln {

class FaultRecord {
  public:
    explicit FaultRecord(Device& device);  // a cleared record on the device

    const DeviceMemory& memory() const { return *memory_; }
    // The launch, then the check, of one checked launch at a time.
    std::mutex& mutex() { return mutex_; }

    // Reads the record (waiting for the device's queued work). Where it holds a fault: clears
    // it and throws the kiln::Error that describes it. `replayed`: the kernel was also recorded
    // (Device::record), so the fault may come from a replay.
    void check(const ir::Kernel& kernel, bool replayed);

  private:
    Device* device_;
    std::shared_ptr<DeviceMemory> memory_;
    std::mutex mutex_;
};

// The message of a recorded fault (the record's kFaultWords words) of `kernel`.
std::string describe_fault(const ir::Kernel& kernel, const uint32_t* record);

}  // namespace kiln
