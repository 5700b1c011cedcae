// Device::record's default: devices without graphs of their own run the recorded work again.
#include <memory>
#include <utility>

#include "kiln/device.hpp"
#include "kiln/error.hpp"

namespace kiln {
namespace {

class RerunRecording final : public Recording {
  public:
    explicit RerunRecording(std::function<void()> work) : work_(std::move(work)) {}
    void replay() override { work_(); }

  private:
    std::function<void()> work_;
};

}  // namespace

std::unique_ptr<Recording> Device::record(std::function<void()> work) {
    if (!work)
        fail("record on {}: no work given; expected a function that enqueues work", info().id);
    return std::make_unique<RerunRecording>(std::move(work));
}

}  // namespace kiln
