#pragma once
// Lists a person types on the command line: "1,2,4,8" or "1..64" (doubling from the first to the last, as
// nccl-tests -f 2 does). Node counts and buffer sizes are both read this way.
#include <functional>
#include <string>
#include <vector>

namespace dtsim::studies {

// The items of a list separated by `separator`, as typed (no trimming); "a,,b" has an empty middle item.
std::vector<std::string> split_list(const std::string& text, char separator = ',');
// `text` without the blanks (spaces, tabs) around it.
std::string trim(const std::string& text);

// Each item is read by `parse_one`, which throws std::invalid_argument saying what it expected. A range
// needs 0 < FROM <= TO.
std::vector<double> parse_series(const std::string& text, const std::function<double(const std::string&)>& parse_one);

} // namespace dtsim::studies
