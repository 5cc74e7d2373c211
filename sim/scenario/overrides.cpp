// `--set path=value` overrides: parsing the assignment and applying it to the document before validation.
#include "sim/scenario/reader.hpp"

#include "io/json_text.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace dtsim::scenario {
namespace {

constexpr const char* kSetFile = "--set";

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

std::optional<std::size_t> array_index(const std::string& token) {
  if (token.empty() || token.size() > 9 ||
      !std::all_of(token.begin(), token.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return std::nullopt;
  return static_cast<std::size_t>(std::stoul(token));
}

} // namespace

Override parse_override(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos)
    throw ScenarioError(kSetFile, "",
                        fmt::format("expected path=value (for example cluster.nodes=8), got \"{}\"", assignment));
  // Checked here rather than when a result is written: every string dtsim reads or writes is UTF-8.
  if (!io::is_utf8(assignment))
    throw ScenarioError(kSetFile, "", "the assignment is not valid UTF-8 text; dtsim reads and writes UTF-8 only");
  Override o{trim(assignment.substr(0, eq)), trim(assignment.substr(eq + 1))};
  if (o.path.empty())
    throw ScenarioError(kSetFile, "",
                        fmt::format("empty path before '=' in \"{}\"; expected path=value (for example "
                                    "cluster.nodes=8)",
                                    assignment));
  for (const auto& token : split_path(o.path))
    if (token.empty())
      throw ScenarioError(
          kSetFile, "",
          fmt::format("empty key in path \"{}\"; expected dotted keys such as cluster.nic.bandwidth", o.path));
  return o;
}

namespace detail {

std::string pointer_of_path(const std::string& dotted_path) {
  std::string out;
  for (const auto& token : split_path(dotted_path))
    out.append("/").append(escape_pointer_token(token));
  return out;
}

void apply_overrides(json& document, const std::vector<Override>& overrides, const std::string& file) {
  for (const auto& o : overrides) {
    // The value is JSON if it parses as JSON (8, true, "x", {"a": 1}), else a plain string (10Gbps). JSON that breaks
    // a limit (too deep, a number beyond a double, a key twice) is refused as it would be in the file.
    const std::string origin = fmt::format(" (from --set {}={})", o.path, o.value);
    json value;
    try {
      value = io::parse_json(o.value);
    } catch (const io::JsonTextError& e) {
      if (std::string_view(e.what()).starts_with("malformed JSON"))
        value = o.value;
      else
        throw ScenarioError(file, pointer_of_path(o.path) + e.pointer(), e.what() + origin);
    }
    const auto tokens = split_path(o.path);
    json* at = &document;
    std::string pointer;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::string& token = tokens[i];
      const bool last = i + 1 == tokens.size();
      if (at->is_object()) {
        if (!last && !at->contains(token)) (*at)[token] = json::object();
        at = &(*at)[token];
      } else if (at->is_array()) {
        const auto index = array_index(token);
        if (!index || *index >= at->size())
          throw ScenarioError(file, pointer + "/" + escape_pointer_token(token),
                              fmt::format("no element \"{}\" in an array of {} elements{}", token, at->size(), origin));
        at = &(*at)[*index];
      } else {
        throw ScenarioError(file, pointer,
                            fmt::format("cannot set \"{}\" inside {}: not an object{}", token, show(*at), origin));
      }
      pointer.append("/").append(escape_pointer_token(token));
    }
    *at = std::move(value);
  }
}

} // namespace detail
} // namespace dtsim::scenario
