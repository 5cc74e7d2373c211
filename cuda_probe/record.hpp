// What the families hand back: measurements (kind, parameters, stats, check), skipped kinds with the reason, and
// failed checks. Plain value types; json_out.cpp turns them into the file (docs/measurement-format.md).
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dtsim::probe {

// Statistics over the timed repetitions, in seconds.
struct Stats {
  int runs = 0;
  double median = 0, mean = 0, min = 0, max = 0, stddev = 0;
};

using Value = std::variant<bool, long long, double, std::string>;

// One JSON object whose fields keep the order they were set in.
struct Record {
  std::vector<std::pair<std::string, Value>> fields;
  std::optional<Stats> stats;
  bool checked = false; // "check": "passed" (only ever set after the kernel matched its reference)

  template <class T> Record& set(std::string key, T value) {
    using U = std::decay_t<T>;
    if constexpr (std::is_same_v<U, bool>)
      fields.emplace_back(std::move(key), Value(value));
    else if constexpr (std::is_integral_v<U>)
      fields.emplace_back(std::move(key), Value(static_cast<long long>(value)));
    else if constexpr (std::is_floating_point_v<U>)
      fields.emplace_back(std::move(key), Value(static_cast<double>(value)));
    else
      fields.emplace_back(std::move(key), Value(std::string(value)));
    return *this;
  }
};

struct Results {
  std::vector<Record> measurements;
  std::vector<Record> skipped;       // {"what": ..., "reason": ...}: not measured on this device or build
  std::vector<Record> failed_checks; // {"what": ..., "error": ...}: measured nothing, the kernel is wrong

  void skip(const std::string& what, const std::string& reason);
  void fail(const std::string& what, const std::string& error);
};

} // namespace dtsim::probe
