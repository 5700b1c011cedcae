// kiln::Error: the one exception type kiln throws for bad input, misuse and failures it cannot
// recover from. Messages name what was wrong and what was expected.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace kiln {

class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws kiln::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Prints a warning to stderr, once per distinct key for the life of the process.
void warn_once(const std::string& key, const std::string& message);

}  // namespace kiln
