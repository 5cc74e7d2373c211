#include "io/table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::io {

std::string aligned_table(const std::vector<std::vector<std::string>>& rows, std::size_t left_columns,
                          const std::string& indent) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      line += c < left_columns ? fmt::format("{:<{}}", row[c], widths[c]) : fmt::format("{:>{}}", row[c], widths[c]);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += indent + line + "\n";
  }
  return out;
}

} // namespace dtsim::io
