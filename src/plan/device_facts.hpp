// Device facts the cost model needs, measured once per device and kept beside its tuning
// decisions (<autotune root>/<device id>.facts, a side file of the autotune TSV under its rules:
// Tuner::read_side_file): the copy bandwidth, the time of an empty launch and the f32 arithmetic
// rate, each the median of a few device-side timings.
#pragma once

#include <string>

#include "kiln/device.hpp"

namespace kiln::plan {

struct DeviceFacts {
    double bandwidth = 0;       // bytes per microsecond a device copy moves (read + write)
    double launch_us = 0;       // one empty launch, queued behind nothing
    double flops = 0;           // f32 operations per microsecond, all compute units busy
    bool gpu = false;           // a CUDA device or an OpenCL GPU: threads are SIMT lanes
    int units = 1;              // compute units (SMs, cores)
    int vector_registers = 32;  // a CPU's (DeviceInfo::vector_registers), not measured
    std::string summary() const;
};

// Measured on first use (per process: from the file when present and readable), unless
// KILN_DEVICE_FACTS gives them for the device's backend: 'BACKEND:bandwidth=B,launch_us=L,
// flops=F,units=U' entries separated by ';' (whether threads are SIMT lanes stays the
// device's), for plans that do not depend on the machine's measurement (tests; reproducing a
// plan made elsewhere). A malformed value is a kiln::Error naming it.
const DeviceFacts& device_facts(Device& device);

}  // namespace kiln::plan
