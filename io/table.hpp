#pragma once
// Text tables as every command prints them: cells aligned in columns, two blanks apart.
#include <cstddef>
#include <string>
#include <vector>

namespace dtsim::io {

// Rows of cells aligned in columns, two blanks apart: the first `left_columns` left-aligned, the others right-aligned
// (figures); each line starts with `indent`, trailing blanks trimmed.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows, std::size_t left_columns = 1,
                          const std::string& indent = "");

} // namespace dtsim::io
