// The bytes OpenClDevice::compile returns and load accepts: a checked envelope around the
// driver's program binary (or OpenCL C source when the driver keeps no binary). Drivers may
// crash on damaged binaries (PoCL asserts on a truncated one), so load() checks the magic,
// length and XXH3-64 hash before the driver sees a byte.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::runtime::opencl {

enum class PayloadKind : uint8_t {
    driver_binary = 'b',  // from clGetProgramInfo(CL_PROGRAM_BINARIES)
    source = 's',         // OpenCL C, rebuilt from source by load()
};

struct Payload {
    PayloadKind kind;
    std::span<const uint8_t> bytes;  // points into the envelope
};

// Envelope layout: "KILNOCL1", kind (1 byte), payload length (u64 LE), XXH3-64 of the payload
// (u64 LE), payload.
std::vector<uint8_t> wrap_payload(PayloadKind kind, std::span<const uint8_t> payload);

// Checks the envelope and returns its payload; throws kiln::Error naming what is wrong.
Payload unwrap_payload(std::span<const uint8_t> envelope);

}  // namespace kiln::runtime::opencl
