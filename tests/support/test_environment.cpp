// Linked into every test binary, set up before the first test:
// - KILN_REQUIRE_BACKENDS (a comma-separated list of cpu, cuda, opencl) fails the binary unless
//   each backend named found a device, so a run in which a backend silently went missing cannot
//   pass. CI sets cpu,opencl; the GPU machine cpu,cuda,opencl.
// - PoCL builds one generic work-group function per kernel (POCL_WORK_GROUP_SPECIALIZATION=0
//   unless set): by default it compiles each kernel again for every new local size, global
//   offset and grid class at its first launch, which tripled the time of the variant sweeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include <stdlib.h>

#include "kiln/device.hpp"

namespace {

class RequireBackends : public ::testing::Environment {
  public:
    void SetUp() override {
        const char* env = std::getenv("KILN_REQUIRE_BACKENDS");
        if (env == nullptr) return;
        const std::string list = env;
        std::string problems;
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = std::min(list.find(',', start), list.size());
            std::string item;
            for (char c : list.substr(start, end - start))
                if (!std::isspace(static_cast<unsigned char>(c)))
                    item += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            start = end + 1;
            if (item.empty()) continue;
            const auto statuses = kiln::backend_status();
            const auto it = std::find_if(statuses.begin(), statuses.end(), [&](const auto& s) {
                return kiln::name(s.backend) == item;
            });
            if (it == statuses.end())
                problems += "\n  unknown backend '" + item + "'; expected cpu, cuda or opencl";
            else if (!it->available)
                problems += "\n  the " + item + " backend is unavailable: " + it->reason;
        }
        // Fatal: no test runs, and the binary fails.
        if (!problems.empty()) FAIL() << "KILN_REQUIRE_BACKENDS='" << list << "':" << problems;
    }
};

[[maybe_unused]] const ::testing::Environment* const kRequireBackends =
    ::testing::AddGlobalTestEnvironment(new RequireBackends);

// Before main, so before any OpenCL platform is loaded.
[[maybe_unused]] const int kPoclGeneric = ::setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);

}  // namespace
