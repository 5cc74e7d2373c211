#pragma once
// Internal to sim/validate*.cpp: the reader of case documents, whose every error names the file and the field's JSON
// pointer, and the parsers and runners of each kind of case that live in their own files.
#include "sim/studies/collective_bench.hpp"
#include "sim/studies/validate.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace dtsim::studies::validate::detail {

using json = nlohmann::json;

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Reads a case document's fields, each error naming the file and the field's JSON pointer.
class Reader {
public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw CaseError(file_, pointer, message);
  }

  void only(const json& object, const std::string& pointer, const std::vector<std::string>& allowed) const {
    for (const auto& [key, value] : object.items())
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(pointer + "/" + key, fmt::format("unknown field \"{}\" (expected one of: {})", key, join(allowed)));
  }

  const json& object(const json& parent, const std::string& pointer, const std::string& key) const {
    const auto& value = required(parent, pointer, key, "an object");
    if (!value.is_object()) fail(pointer + "/" + key, "expected an object");
    return value;
  }

  std::string text(const json& parent, const std::string& pointer, const std::string& key) const {
    const auto& value = required(parent, pointer, key, "a string");
    if (!value.is_string() || value.get<std::string>().empty())
      fail(pointer + "/" + key, "expected a non-empty string");
    return value.get<std::string>();
  }

  std::string optional_text(const json& parent, const std::string& pointer, const std::string& key) const {
    return parent.contains(key) ? text(parent, pointer, key) : std::string();
  }

  double positive(const json& parent, const std::string& pointer, const std::string& key) const {
    const auto& value = required(parent, pointer, key, "a positive number");
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0)
      fail(pointer + "/" + key, fmt::format("expected a positive number, got {}", value.dump()));
    return value.get<double>();
  }

  // A case's "set": "path=value" overrides, as `dtsim run --set` takes them (absent: none).
  void sets(const json& parent, const std::string& pointer, std::vector<std::string>& texts,
            std::vector<scenario::Override>& overrides) const {
    if (!parent.contains("set")) return;
    const auto& sets = parent.at("set");
    if (!sets.is_array()) fail(pointer + "/set", "expected an array of \"path=value\" strings");
    for (std::size_t i = 0; i < sets.size(); ++i) {
      const auto at = fmt::format("{}/set/{}", pointer, i);
      if (!sets[i].is_string()) fail(at, "expected a \"path=value\" string");
      texts.push_back(sets[i].get<std::string>());
      try {
        overrides.push_back(scenario::parse_override(texts.back()));
      } catch (const scenario::ScenarioError& e) {
        fail(at, e.detail());
      }
    }
  }

  // A name `parse` knows, or an error listing `names`.
  template <class Parse>
  auto name(const json& parent, const std::string& pointer, const std::string& key, Parse parse,
            const std::vector<std::string>& names, const char* what) const {
    const auto parsed = parse(text(parent, pointer, key));
    if (!parsed) fail(pointer + "/" + key, fmt::format("unknown {} (expected one of: {})", what, join(names)));
    return *parsed;
  }

private:
  const json& required(const json& parent, const std::string& pointer, const std::string& key,
                       const std::string& expected) const {
    if (!parent.contains(key)) fail(pointer + "/" + key, fmt::format("missing field \"{}\" ({})", key, expected));
    return parent.at(key);
  }

  std::string file_;
};

// validate_collective.cpp: a "collective" object, and the bus bandwidth it reaches (bytes/s) as `dtsim collective`
// benchmarks it.
CollectiveRun parse_collective(const Reader& r, const json& object);
CollectivePoint run_collective(const CollectiveRun& run); // its one size, as dtsim collective runs it

} // namespace dtsim::studies::validate::detail
