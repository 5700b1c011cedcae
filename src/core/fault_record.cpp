// FaultRecord: allocation, read-back and the message of a checked kernel's first fault.
#include "core/fault_record.hpp"

#include <array>

#include <fmt/format.h>

#include "ir/check_bounds.hpp"
#include "kiln/error.hpp"

namespace kiln {
namespace {

constexpr size_t kRecordBytes = ir::kFaultWords * sizeof(uint32_t);

int64_t wide(const uint32_t* record, int lo) {
    return static_cast<int64_t>(uint64_t{record[lo]} | (uint64_t{record[lo + 1]} << 32));
}

// "buffer 'x'", "shared tile 'row'", "per-thread array 'lanes'".
std::string memory_name(const ir::Kernel& k, ir::MemRef m) {
    if (m.space == ir::MemSpace::global) {
        if (m.id >= 0 && static_cast<size_t>(m.id) < k.params.size())
            return fmt::format("buffer '{}'", k.params[static_cast<size_t>(m.id)].name);
        return fmt::format("buffer #{}", m.id);
    }
    const auto& list = m.space == ir::MemSpace::shared ? k.tiles : k.arrays;
    const char* what = m.space == ir::MemSpace::shared ? "shared tile" : "per-thread array";
    if (m.id >= 0 && static_cast<size_t>(m.id) < list.size())
        return fmt::format("{} '{}'", what, list[static_cast<size_t>(m.id)].name);
    // Tiles and arrays past the kernel's own were added by lower_folds.
    return fmt::format("{} #{} (made by kiln to lower a fold)", what, m.id);
}

}  // namespace

FaultRecord::FaultRecord(Device& device)
    : device_(&device), memory_(device.allocate(kRecordBytes)) {
    const uint32_t zero = 0;
    device.fill(*memory_, &zero, sizeof zero);
}

void FaultRecord::check(const ir::Kernel& kernel, bool replayed) {
    std::array<uint32_t, ir::kFaultWords> record{};
    device_->read(*memory_, 0, record.data(), kRecordBytes);
    if (record[ir::fault_site] == 0) return;
    const std::string message = describe_fault(kernel, record.data());
    const uint32_t zero = 0;
    device_->fill(*memory_, &zero, sizeof zero);
    fail("{}{}", message,
         replayed ? " (in this launch or in a replay of a recording that holds this kernel)" : "");
}

std::string describe_fault(const ir::Kernel& k, const uint32_t* record) {
    if (record[ir::fault_site] == ir::kGridSite)
        return fmt::format(
            "kernel {}: a grid of {} blocks of {} threads has positions past INT32_MAX, where the "
            "kernel's i32 positions wrap; checked mode proved accesses in range assuming they do "
            "not, and skipped them in this launch: launch at most {} blocks or compute positions "
            "in i64 (KILN_CHECK_BOUNDS)",
            k.name, wide(record, ir::fault_index_lo), k.block_size,
            wide(record, ir::fault_length_lo) - 1);
    const ir::AccessSite site = ir::decode_site(record[ir::fault_site]);
    const std::string access =
        site.width == 1 ? (site.store ? "store to" : "load from")
                        : fmt::format("vector {} of {} elements {}", site.store ? "store" : "load",
                                      site.width, site.store ? "to" : "from");
    return fmt::format(
        "kernel {}: out-of-bounds {} {} at index {}; its length is {} (block {}, thread {}). "
        "The access was skipped{} (KILN_CHECK_BOUNDS)",
        k.name, access, memory_name(k, site.mem), wide(record, ir::fault_index_lo),
        wide(record, ir::fault_length_lo), record[ir::fault_block], record[ir::fault_thread],
        site.store ? "" : " and read as 0");
}

}  // namespace kiln
