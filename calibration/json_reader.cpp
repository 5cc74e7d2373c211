#include "calibration/json_reader.hpp"

#include "io/json_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dtsim::calibration::detail {

std::string pointer(const std::string& parent, std::string_view key) {
  return io::append_pointer(parent, key);
}

std::string pointer(const std::string& parent, std::size_t index) {
  return fmt::format("{}/{}", parent, index);
}

} // namespace dtsim::calibration::detail

namespace dtsim::calibration {

std::string read_input_file(const std::string& path, const std::string& what) {
  try {
    return io::read_text_file(path, what);
  } catch (const io::FileError& e) {
    throw CalibrationError(path, "", e.what());
  }
}

} // namespace dtsim::calibration

namespace dtsim::calibration::detail {

json parse_document(const std::string& text, const std::string& origin) {
  try {
    return io::parse_json(text);
  } catch (const io::JsonTextError& e) {
    throw CalibrationError(origin, e.pointer(), fmt::format("invalid JSON: {}", e.what()));
  }
}

void Reader::fail(const std::string& path, const std::string& message) const {
  throw CalibrationError(origin_, path.empty() ? "/" : path, message);
}

const json* Reader::find(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

const json& Reader::member(const json& obj, const std::string& path, std::string_view key,
                           const std::string& what) const {
  const json* v = find(obj, key);
  if (v == nullptr) fail(pointer(path, key), fmt::format("expected {}, but it is missing", what));
  return *v;
}

void Reader::expect_object(const json& v, const std::string& path,
                           std::initializer_list<std::string_view> allowed) const {
  if (!v.is_object()) fail(path, fmt::format("expected an object, got {}", v.type_name()));
  if (allowed.size() == 0) return;
  for (const auto& [key, value] : v.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      fail(pointer(path, key), fmt::format("unknown field (expected one of: {})", fmt::join(allowed, ", ")));
  }
}

void Reader::expect_array(const json& v, const std::string& path, bool non_empty) const {
  if (!v.is_array())
    fail(path, fmt::format("expected {}array, got {}", non_empty ? "a non-empty " : "an ", v.type_name()));
  if (non_empty && v.empty()) fail(path, "expected a non-empty array, got an empty array");
}

std::string Reader::string(const json& obj, const std::string& path, std::string_view key) const {
  const json& v = member(obj, path, key, "a string");
  if (!v.is_string() || v.get_ref<const std::string&>().empty())
    fail(pointer(path, key), fmt::format("expected a non-empty string, got {}", describe(v)));
  return v.get<std::string>();
}

std::string Reader::one_of(const json& obj, const std::string& path, std::string_view key,
                           const std::vector<std::string>& names) const {
  const std::string what = fmt::format("one of: {}", fmt::join(names, ", "));
  const json& v = member(obj, path, key, what);
  if (!v.is_string()) fail(pointer(path, key), fmt::format("expected {}, got {}", what, v.type_name()));
  const auto& s = v.get_ref<const std::string&>();
  if (std::find(names.begin(), names.end(), s) == names.end())
    fail(pointer(path, key), fmt::format("expected {}, got \"{}\"", what, s));
  return s;
}

bool Reader::boolean(const json& obj, const std::string& path, std::string_view key) const {
  const json& v = member(obj, path, key, "true or false");
  if (!v.is_boolean()) fail(pointer(path, key), fmt::format("expected true or false, got {}", v.type_name()));
  return v.get<bool>();
}

std::int64_t Reader::integer(const json& obj, const std::string& path, std::string_view key, std::int64_t min,
                             std::int64_t max) const {
  const std::string what = max < 9'000'000'000'000'000 ? fmt::format("a whole number from {} to {}", min, max)
                                                       : fmt::format("a whole number >= {}", min);
  const json& v = member(obj, path, key, what);
  // Probes written in C++ print whole doubles as 8192.0 at times: a number that is whole is accepted.
  if (!v.is_number()) fail(pointer(path, key), fmt::format("expected {}, got {}", what, v.type_name()));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x != std::floor(x) || x < static_cast<double>(min) || x > static_cast<double>(max))
    fail(pointer(path, key), fmt::format("expected {}, got {}", what, v.dump()));
  return static_cast<std::int64_t>(x);
}

double Reader::number(const json& v, const std::string& path, const std::string& what, double min, bool min_inclusive,
                      bool at_most_one) const {
  if (!v.is_number()) fail(path, fmt::format("expected {}, got {}", what, v.type_name()));
  const double x = v.get<double>();
  const bool ok = std::isfinite(x) && (min_inclusive ? x >= min : x > min) && (!at_most_one || x <= 1.0);
  if (!ok) fail(path, fmt::format("expected {}, got {}", what, v.dump()));
  return x;
}

double Reader::positive(const json& obj, const std::string& path, std::string_view key, const std::string& unit) const {
  const std::string what = fmt::format("a positive number in {}", unit);
  return number(member(obj, path, key, what), pointer(path, key), what, 0, false);
}

double Reader::non_negative(const json& obj, const std::string& path, std::string_view key,
                            const std::string& unit) const {
  const std::string what = fmt::format("a number >= 0 in {}", unit);
  return number(member(obj, path, key, what), pointer(path, key), what, 0, true);
}

double Reader::fraction(const json& v, const std::string& path) const {
  return number(v, path, "a fraction in (0, 1]", 0, false, true);
}

Precision Reader::math_precision_at(const json& v, const std::string& path) const {
  const std::string what = fmt::format("a precision (one of: {})", fmt::join(math_precision_names(), ", "));
  if (!v.is_string()) fail(path, fmt::format("expected {}, got {}", what, v.type_name()));
  const auto& name = v.get_ref<const std::string&>();
  const auto p = parse_precision(name);
  if (!p) fail(path, fmt::format("expected {}, got \"{}\"", what, name));
  if (*p == Precision::amp) fail(path, "amp is not a math precision: AMP uses the fp16 entry");
  return *p;
}

Precision Reader::precision(const json& obj, const std::string& path, std::string_view key) const {
  const std::string what = fmt::format("a precision (one of: {})", fmt::join(math_precision_names(), ", "));
  return math_precision_at(member(obj, path, key, what), pointer(path, key));
}

std::map<Precision, double> Reader::by_precision(const json& obj, const std::string& path, bool fractions) const {
  expect_object(obj, path, {});
  std::map<Precision, double> out;
  for (const auto& [key, value] : obj.items()) {
    const std::string at = pointer(path, key);
    const auto p = parse_precision(key);
    if (!p) fail(at, fmt::format("unknown precision (expected one of: {})", fmt::join(math_precision_names(), ", ")));
    if (*p == Precision::amp) fail(at, "amp is not a math precision: AMP uses the fp16 entry");
    out[*p] = fractions ? fraction(value, at) : number(value, at, "a positive number in FLOP/s", 0, false);
  }
  return out;
}

std::vector<std::string> Reader::math_precision_names() {
  auto names = precision_names();
  names.erase(std::remove(names.begin(), names.end(), std::string(to_string(Precision::amp))), names.end());
  return names;
}

std::string Reader::describe(const json& v) {
  return v.is_string() ? "an empty string" : v.type_name();
}

// A number as a person writes one in a profile: the shortest digits that read back exactly, with an exponent that is
// a multiple of 3 for large and small values ("989.4e12", "3.35e12", "4e-6"), plainly in between ("0.81", "132").
std::string json_number(double v) {
  char buffer[64];
  const double a = std::fabs(v);
  if (a == 0 || (a >= 1e-3 && a < 1e6)) {
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, r.ptr);
  }
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::scientific);
  const std::string text(buffer, r.ptr); // "-9.894e+14"
  const auto e = text.find('e');
  const int exponent = std::stoi(text.substr(e + 1));
  std::string mantissa = text.substr(0, e);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits = mantissa.substr(0, 1) + (mantissa.size() > 2 ? mantissa.substr(2) : std::string());
  const int engineering = static_cast<int>(std::floor(exponent / 3.0)) * 3;
  const std::size_t integer_digits = static_cast<std::size_t>(1 + exponent - engineering); // 1 to 3
  if (digits.size() < integer_digits) digits.append(integer_digits - digits.size(), '0');
  std::string out = negative ? "-" : "";
  out.append(digits, 0, integer_digits);
  if (digits.size() > integer_digits) {
    out += '.';
    out.append(digits, integer_digits);
  }
  out += 'e';
  out += std::to_string(engineering);
  return out;
}

std::string by_precision_inline(const std::map<Precision, double>& table) {
  std::string out = "{";
  for (const auto& [p, value] : table)
    out += fmt::format("{}\"{}\": {}", out.size() > 1 ? ", " : "", to_string(p), json_number(value));
  return out + "}";
}

} // namespace dtsim::calibration::detail
