#pragma once
// Internal to calibration/: reading a JSON document (a GPU profile, a measurement file) field by field. Every failure
// throws CalibrationError(file, JSON pointer (RFC 6901) of the offending value, what was expected), so a typo in a
// shipped profile or a probe's output is reported where it is.
#include "calibration/error.hpp"
#include "calibration/precision.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::calibration::detail {

using nlohmann::json;

// `parent` extended by one reference token (escaped: ~ -> ~0, / -> ~1), or by an array index.
std::string pointer(const std::string& parent, std::string_view key);
std::string pointer(const std::string& parent, std::size_t index);

// Parses a whole document; invalid JSON throws CalibrationError(origin, "", "invalid JSON: ...").
json parse_document(const std::string& text, const std::string& origin);

class Reader {
public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}
  const std::string& origin() const { return origin_; }

  [[noreturn]] void fail(const std::string& path, const std::string& message) const;

  // The member `key` of object `obj` (at `path`), which must exist; `what` describes the expected value.
  const json& member(const json& obj, const std::string& path, std::string_view key, const std::string& what) const;
  // The member, or nullptr when absent.
  static const json* find(const json& obj, std::string_view key);

  // `v` is an object; when `allowed` is not empty, every key must be one of them.
  void expect_object(const json& v, const std::string& path, std::initializer_list<std::string_view> allowed) const;
  void expect_array(const json& v, const std::string& path, bool non_empty) const;

  std::string string(const json& obj, const std::string& path, std::string_view key) const; // non-empty
  // One of `names`, the message listing them.
  std::string one_of(const json& obj, const std::string& path, std::string_view key,
                     const std::vector<std::string>& names) const;
  bool boolean(const json& obj, const std::string& path, std::string_view key) const;
  // A whole number >= min, up to 9e15 (whole in a double).
  std::int64_t integer(const json& obj, const std::string& path, std::string_view key, std::int64_t min,
                       std::int64_t max = 9'000'000'000'000'000) const;
  // A whole number >= min that an int holds (a count: SMs, ranks, runs).
  int count(const json& obj, const std::string& path, std::string_view key, int min) const {
    return static_cast<int>(integer(obj, path, key, min, std::numeric_limits<int>::max()));
  }

  // A number with lower bound `min` (inclusive or not) and an optional upper bound of 1 for fractions.
  double number(const json& v, const std::string& path, const std::string& what, double min, bool min_inclusive,
                bool at_most_one = false) const;
  double positive(const json& obj, const std::string& path, std::string_view key, const std::string& unit) const;
  double non_negative(const json& obj, const std::string& path, std::string_view key, const std::string& unit) const;
  double fraction(const json& v, const std::string& path) const;

  // A math precision (fp32, tf32, fp16, bf16, fp8): amp is refused because it always runs on the fp16 entry.
  Precision math_precision_at(const json& v, const std::string& path) const;
  Precision precision(const json& obj, const std::string& path, std::string_view key) const;
  // An object keyed by math precision, of fractions in (0, 1] or of positive FLOP/s.
  std::map<Precision, double> by_precision(const json& obj, const std::string& path, bool fractions) const;

  static std::vector<std::string> math_precision_names();
  // A value's JSON type for messages ("string", "number"), or "an empty string".
  static std::string describe(const json& v);

private:
  std::string origin_;
};

// Writing: a number as a person writes one in a profile (json_number), and an object of numbers by precision on one
// line.
std::string json_number(double v);
std::string by_precision_inline(const std::map<Precision, double>& table);

} // namespace dtsim::calibration::detail
