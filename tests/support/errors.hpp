// error_of: runs a callable and returns the message of the kiln::Error it throws, or
// "(no kiln::Error)" when it throws none, for asserting on error messages.
#pragma once

#include <functional>
#include <string>

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

}  // namespace kiln::test
