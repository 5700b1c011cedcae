// The checked envelope around OpenCL program binaries: wrap and unwrap.
#include "runtime/opencl/binary_format.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "kiln/error.hpp"

namespace kiln::runtime::opencl {
namespace {

constexpr std::string_view magic = "KILNOCL1";
constexpr size_t header_bytes = 8 + 1 + 8 + 8;

void put_u64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_u64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

}  // namespace

std::vector<uint8_t> wrap_payload(PayloadKind kind, std::span<const uint8_t> payload) {
    std::vector<uint8_t> out(header_bytes + payload.size());
    std::memcpy(out.data(), magic.data(), magic.size());
    out[8] = static_cast<uint8_t>(kind);
    put_u64(out.data() + 9, payload.size());
    put_u64(out.data() + 17, XXH3_64bits(payload.data(), payload.size()));
    if (!payload.empty()) std::memcpy(out.data() + header_bytes, payload.data(), payload.size());
    return out;
}

Payload unwrap_payload(std::span<const uint8_t> envelope) {
    if (envelope.size() < header_bytes ||
        !std::equal(magic.begin(), magic.end(), envelope.begin())) {
        fail("OpenCL load: not a kiln OpenCL binary ({} bytes without the '{}' header)",
             envelope.size(), magic);
    }
    auto kind = static_cast<PayloadKind>(envelope[8]);
    if (kind != PayloadKind::driver_binary && kind != PayloadKind::source) {
        fail("OpenCL load: unknown payload kind {} in a kiln OpenCL binary", envelope[8]);
    }
    uint64_t length = get_u64(envelope.data() + 9);
    if (length != envelope.size() - header_bytes) {
        fail("OpenCL load: damaged binary: header says {} payload bytes, found {}", length,
             envelope.size() - header_bytes);
    }
    auto payload = envelope.subspan(header_bytes);
    if (get_u64(envelope.data() + 17) != XXH3_64bits(payload.data(), payload.size())) {
        fail("OpenCL load: damaged binary: payload hash does not match");
    }
    return {kind, payload};
}

}  // namespace kiln::runtime::opencl
