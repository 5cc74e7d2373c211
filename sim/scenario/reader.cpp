#include "sim/scenario/reader.hpp"
#include "sim/scenario/limits.hpp"

#include "io/json_text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

namespace dtsim::scenario::detail {
namespace {

std::string_view noun(Dimension dim) {
  switch (dim) {
  case Dimension::bandwidth:
    return "bandwidth";
  case Dimension::bytes:
    return "size";
  case Dimension::time:
    return "time";
  case Dimension::flop_rate:
    return "FLOP rate";
  case Dimension::duration:
    return "duration";
  case Dimension::power:
    return "power";
  case Dimension::carbon_intensity:
    return "carbon intensity";
  }
  return "quantity";
}

// "a bandwidth" -> "a bandwidth > 0"; describe() gives the long form with examples.
std::string bounded(Dimension dim, Bound bound) {
  return fmt::format("a {} {}", noun(dim), bound == Bound::positive ? "> 0" : ">= 0");
}

// What the format accepts of each dimension, in base units (limits.hpp says why).
struct Range {
  double min;
  double max;
  const char* text;
};
Range range_of(Dimension dim) {
  switch (dim) {
  case Dimension::bandwidth:
    return {limits::kMinBandwidth, limits::kMaxBandwidth, "from 1 kB/s (8 kbit/s) to 1 PB/s (8 Pbit/s)"};
  case Dimension::bytes:
    return {1, limits::kMaxBytes, "from 1 B to 1 PiB"};
  case Dimension::time:
    return {0, limits::kMaxLatency, "of at most 1 s"};
  case Dimension::flop_rate:
    return {1, limits::kMaxFlopRate, "from 1 FLOP/s to 1e21 FLOP/s"};
  case Dimension::duration:
    return {0, limits::kMaxDuration, "of at most 10,000 years"};
  case Dimension::power:
    return {0, limits::kMaxPower, "of at most 1 MW"};
  case Dimension::carbon_intensity:
    return {0, limits::kMaxCarbonIntensity, "of at most 5 kg/kWh"};
  }
  return {0, std::numeric_limits<double>::max(), ""};
}

bool is_integer(const json& v) {
  return v.is_number_integer() || v.is_number_unsigned();
}

} // namespace

std::string show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax - 3) + "...";
  return text;
}

std::string escape_pointer_token(std::string_view token) {
  return io::escape_pointer_token(token);
}

Object::Object(const std::string& file, const json* value, std::string pointer, std::vector<std::string> known)
    : file_(file), value_(value), pointer_(std::move(pointer)) {
  if (value_ == nullptr) return;
  if (!value_->is_object()) fail_here("expected an object, got " + show(*value_));
  std::sort(known.begin(), known.end());
  for (const auto& [key, _] : value_->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string hint = did_you_mean(key, known);
    if (hint.empty()) hint = "; known keys: " + quoted_list(known);
    fail(key, fmt::format("unknown key \"{}\"{}", key, hint));
  }
}

const json* Object::get(std::string_view key) const {
  if (value_ == nullptr) return nullptr;
  const auto it = value_->find(key);
  return it == value_->end() ? nullptr : &*it;
}

void Object::fail(std::string_view key, const std::string& message) const {
  throw ScenarioError(file_, pointer(key), message);
}

void Object::fail_here(const std::string& message) const {
  throw ScenarioError(file_, pointer_, message);
}

const json& Object::required(std::string_view key, const std::string& expected) const {
  const json* v = get(key);
  if (v == nullptr) fail(key, "missing; expected " + expected);
  return *v;
}

Object Object::object(std::string_view key, std::vector<std::string> known) const {
  return Object(file_, get(key), pointer(key), std::move(known));
}

std::int64_t Object::integer(std::string_view key, std::int64_t min, std::optional<std::int64_t> fallback,
                             std::int64_t max) const {
  const std::string expected = fmt::format("an integer >= {}", min);
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, expected);
  if (!is_integer(v)) {
    std::string hint;
    if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>())
      hint = " (write whole numbers without a decimal point)";
    fail(key, fmt::format("expected {}, got {}{}", expected, show(v), hint));
  }
  const bool too_large = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max);
  if (too_large || v.get<std::int64_t>() > max)
    fail(key, fmt::format("expected {} and <= {}, got {}", expected, max, show(v)));
  const auto n = v.get<std::int64_t>();
  if (n < min) fail(key, fmt::format("expected {}, got {}", expected, show(v)));
  return n;
}

std::uint64_t Object::unsigned_integer(std::string_view key, std::optional<std::uint64_t> fallback) const {
  const std::string expected = "an integer >= 0";
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, expected);
  // is_number_integer() is also true of unsigned values; only signed ones can be negative.
  if (!is_integer(v) || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0))
    fail(key, fmt::format("expected {}, got {}", expected, show(v)));
  return v.get<std::uint64_t>();
}

double Object::number(std::string_view key, double min, std::optional<double> fallback, double max) const {
  const std::string expected = max < std::numeric_limits<double>::max()
                                   ? fmt::format("a number >= {} and <= {:g}", min, max)
                                   : fmt::format("a number >= {}", min);
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, expected);
  if (!v.is_number() || !(v.get<double>() >= min && v.get<double>() <= max))
    fail(key, fmt::format("expected {}, got {}", expected, show(v)));
  return v.get<double>();
}

double Object::quantity(std::string_view key, Dimension dim, Bound bound, std::optional<double> fallback) const {
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, describe(dim));
  std::optional<double> q;
  if (v.is_number())
    q = v.get<double>();
  else if (v.is_string())
    q = parse_quantity(v.get<std::string>(), dim);
  if (!q) {
    std::string hint;
    if (v.is_string())
      for (auto other : {Dimension::bandwidth, Dimension::bytes, Dimension::time, Dimension::flop_rate,
                         Dimension::duration, Dimension::power, Dimension::carbon_intensity})
        if (other != dim && parse_quantity(v.get<std::string>(), other))
          hint = fmt::format(" (that is a {}, not a {})", noun(other), noun(dim));
    // A rate written as its amount ("100Gb", "25GB"): the unit it most likely meant.
    // Bytes as "GB/s" (as the examples write them), bits as "Gbps".
    const bool bytes = v.is_string() && v.get<std::string>().ends_with('B');
    if (v.is_string())
      for (const char* per_second : bytes ? std::array{"/s", "ps"} : std::array{"ps", "/s"})
        if (const auto meant = v.get<std::string>() + per_second; parse_quantity(meant, dim)) {
          hint += fmt::format("; did you mean \"{}\"?", meant);
          break;
        }
    fail(key, fmt::format("expected {}, got {}{}", describe(dim), show(v), hint));
  }
  if (bound == Bound::positive ? !(*q > 0) : !(*q >= 0))
    fail(key, fmt::format("expected {}, got {}", bounded(dim, bound), show(v)));
  if (*q != 0 && (*q < range_of(dim).min || *q > range_of(dim).max))
    fail(key, fmt::format("expected a {} {}, got {}", noun(dim), range_of(dim).text, show(v)));
  return *q;
}

bool Object::boolean(std::string_view key, std::optional<bool> fallback) const {
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, "true or false");
  if (!v.is_boolean()) fail(key, "expected true or false, got " + show(v));
  return v.get<bool>();
}

// Text that reaches a terminal, a report or a file name must not steer them: control characters (an escape sequence
// rewrites the terminal) other than tab and newline, and Unicode's bidirectional overrides and isolates (U+202A to
// U+202E, U+2066 to U+2069: a name that reads differently from what it is).
static std::optional<std::size_t> steering_character(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) return i;
    if (c == 0xe2 && i + 2 < text.size()) {
      const auto b = static_cast<unsigned char>(text[i + 1]), d = static_cast<unsigned char>(text[i + 2]);
      if ((b == 0x80 && d >= 0xaa && d <= 0xae) || (b == 0x81 && d >= 0xa6 && d <= 0xa9)) return i;
    }
  }
  return std::nullopt;
}

std::string Object::string(std::string_view key, std::optional<std::string> fallback, bool allow_empty) const {
  const std::string expected = allow_empty ? "a string" : "a non-empty string";
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, expected);
  if (!v.is_string() || (!allow_empty && v.get<std::string>().empty()))
    fail(key, fmt::format("expected {}, got {}", expected, show(v)));
  auto text = v.get<std::string>();
  if (const auto at = steering_character(text))
    fail(key, fmt::format("expected printable text, got a control or text-direction character at byte {}", *at));
  return text;
}

std::string Object::choice(std::string_view key, const std::vector<std::string>& allowed, std::string_view what,
                           std::optional<std::string> fallback) const {
  const std::string expected = "one of " + quoted_list(allowed);
  if (!has(key) && fallback) return *fallback;
  const json& v = required(key, expected);
  if (!v.is_string()) fail(key, fmt::format("expected {}, got {}", expected, show(v)));
  const auto name = v.get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
    const std::string hint = did_you_mean(name, allowed); // "; did you mean "x"?"
    fail(key, hint.empty() ? fmt::format("unknown {} \"{}\"; expected {}", what, name, expected)
                           : fmt::format("unknown {} \"{}\"{} Expected {}", what, name, hint, expected));
  }
  return name;
}

} // namespace dtsim::scenario::detail
