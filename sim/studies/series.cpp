#include "sim/studies/series.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dtsim::studies {

std::vector<double> parse_series(const std::string& text, const std::function<double(const std::string&)>& parse_one) {
  std::vector<double> values;
  if (const auto dots = text.find(".."); dots != std::string::npos) {
    const double from = parse_one(text.substr(0, dots));
    const double to = parse_one(text.substr(dots + 2));
    if (from <= 0 || to < from)
      throw std::invalid_argument(fmt::format("bad range \"{}\": expected FROM..TO with 0 < FROM <= TO", text));
    for (double v = from; v <= to * (1 + 1e-12); v *= 2)
      values.push_back(v);
    return values;
  }
  for (const auto& item : split_list(text))
    values.push_back(parse_one(item));
  return values;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(separator, start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

} // namespace dtsim::studies
