// Checks a tuned op's entry point against a fresh tuner: the first call races every variant
// once (a miss, one TSV line under the op's name and the expected key) and the second hits;
// both return the oracle's bits.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "everywhere.hpp"
#include "kiln/device.hpp"
#include "kiln/tune.hpp"

namespace kiln::test {

// `run` calls the entry point with the tuner given; `key_prefix` is the key before the variant
// set's digest ('#...'); `check_winner` is given the recorded winner's name.
inline void expect_tunes_once_then_hits(
    const std::string& op, Device& device, const std::function<HostBuffer(Tuner&)>& run,
    const HostBuffer& want, size_t variants, const std::string& key_prefix,
    const std::function<void(const std::string&)>& check_winner) {
    const auto root =
        std::filesystem::temp_directory_path() /
        fmt::format("kiln_{}_tune_{}", op, ::testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root);
    Tuner tuner(root);
    EXPECT_TRUE(identical(run(tuner), want));
    const auto c1 = tuner.counters();
    EXPECT_EQ(c1.misses, 1u);
    EXPECT_EQ(c1.benched, variants);
    const auto entries = tuner.entries(device.info().id);
    EXPECT_EQ(entries.size(), 1u);
    if (entries.size() == 1) {
        EXPECT_EQ(entries[0].op, op);
        EXPECT_EQ(entries[0].key.rfind(key_prefix + "#", 0), 0u) << entries[0].key;
        check_winner(entries[0].winner);
    }
    EXPECT_TRUE(identical(run(tuner), want));
    const auto c2 = tuner.counters();
    EXPECT_EQ(c2.hits, 1u);
    EXPECT_EQ(c2.benched, c1.benched);
    std::filesystem::remove_all(root);
}

}  // namespace kiln::test
