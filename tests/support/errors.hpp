// error_of: runs a callable and returns the message of the kiln::Error it throws, or
// "(no kiln::Error)" when it throws none, for asserting on error messages; expect_error_naming
// asserts that the message names an op and holds each of some phrases.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "kiln/error.hpp"

namespace kiln::test {

inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no kiln::Error)";
}

inline void expect_error_naming(const std::string& op, const std::function<void()>& f,
                                const std::vector<std::string>& needles) {
    const std::string what = error_of(f);
    EXPECT_NE(what.find(op), std::string::npos) << what;
    for (const auto& needle : needles) EXPECT_NE(what.find(needle), std::string::npos) << what;
}

}  // namespace kiln::test
