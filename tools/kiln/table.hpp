// A plain-text table for the CLI: a header row, a rule, and rows padded to column widths.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace kiln::cli {

class Table {
  public:
    explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
    // Adds a row; it must have one cell per header.
    void add(std::vector<std::string> row);
    void print(std::FILE* out = stdout) const;

  private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace kiln::cli
