#include "sim/scenario/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

namespace dtsim::scenario {
namespace {

// value in base units = number * multiply / divide. Dividing by an exact power of ten (rather than
// multiplying by an inexact 1e-6) keeps "5us" exactly the double nearest 5e-6.
struct Unit {
  std::string_view symbol;
  double multiply;
  double divide = 1.0;
};

constexpr double kKi = 1024.0;
constexpr double kMi = kKi * 1024.0;
constexpr double kGi = kMi * 1024.0;
constexpr double kTi = kGi * 1024.0;

// Bits per second (decimal prefixes, as network gear is rated) and bytes per second in both spellings
// ("GB/s" and "GBps"); binary prefixes only for bytes.
constexpr std::array kBandwidthUnits{
    Unit{"bps", 1, 8},     Unit{"b/s", 1, 8},     Unit{"Kbps", 1e3, 8}, Unit{"kbps", 1e3, 8}, Unit{"Kb/s", 1e3, 8},
    Unit{"kb/s", 1e3, 8},  Unit{"Mbps", 1e6, 8},  Unit{"Mb/s", 1e6, 8}, Unit{"Gbps", 1e9, 8}, Unit{"Gb/s", 1e9, 8},
    Unit{"Tbps", 1e12, 8}, Unit{"Tb/s", 1e12, 8}, Unit{"B/s", 1},       Unit{"Bps", 1},       Unit{"KB/s", 1e3},
    Unit{"kB/s", 1e3},     Unit{"KBps", 1e3},     Unit{"kBps", 1e3},    Unit{"MB/s", 1e6},    Unit{"MBps", 1e6},
    Unit{"GB/s", 1e9},     Unit{"GBps", 1e9},     Unit{"TB/s", 1e12},   Unit{"TBps", 1e12},   Unit{"KiB/s", kKi},
    Unit{"KiBps", kKi},    Unit{"MiB/s", kMi},    Unit{"MiBps", kMi},   Unit{"GiB/s", kGi},   Unit{"GiBps", kGi},
    Unit{"TiB/s", kTi},    Unit{"TiBps", kTi},
};

constexpr std::array kByteUnits{
    Unit{"B", 1},     Unit{"KB", 1e3},  Unit{"kB", 1e3},  Unit{"MB", 1e6},  Unit{"GB", 1e9},
    Unit{"TB", 1e12}, Unit{"KiB", kKi}, Unit{"MiB", kMi}, Unit{"GiB", kGi}, Unit{"TiB", kTi},
};

constexpr std::array kTimeUnits{
    Unit{"ns", 1, 1e9},      Unit{"us", 1, 1e6}, Unit{"\u00b5s", 1, 1e6},
    Unit{"\u03bcs", 1, 1e6}, Unit{"ms", 1, 1e3}, Unit{"s", 1},
};

// Days of 24 hours and years of 365 days: what failure studies and cloud bills count in.
constexpr std::array kDurationUnits{
    Unit{"ms", 1, 1e3}, Unit{"s", 1}, Unit{"min", 60}, Unit{"h", 3600}, Unit{"d", 86400}, Unit{"y", 365 * 86400.0},
};

constexpr std::array kPowerUnits{Unit{"W", 1}, Unit{"kW", 1e3}, Unit{"MW", 1e6}};

// Grams of CO2 (equivalent) per kilowatt-hour, as grid operators and the IEA publish a grid's intensity.
constexpr std::array kCarbonUnits{
    Unit{"g/kWh", 1},       Unit{"gCO2/kWh", 1},     Unit{"gCO2e/kWh", 1}, Unit{"kg/kWh", 1e3},
    Unit{"kgCO2/kWh", 1e3}, Unit{"kgCO2e/kWh", 1e3}, Unit{"kg/MWh", 1},    Unit{"t/MWh", 1e3},
};

constexpr std::array kFlopRateUnits{
    Unit{"FLOPS", 1},     Unit{"FLOP/s", 1},    Unit{"MFLOPS", 1e6},   Unit{"MFLOP/s", 1e6}, Unit{"GFLOPS", 1e9},
    Unit{"GFLOP/s", 1e9}, Unit{"TFLOPS", 1e12}, Unit{"TFLOP/s", 1e12}, Unit{"PFLOPS", 1e15}, Unit{"PFLOP/s", 1e15},
};

bool is_space(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

template <std::size_t N> std::optional<Unit> find_unit(std::string_view symbol, const std::array<Unit, N>& units) {
  for (const auto& u : units)
    if (u.symbol == symbol) return u;
  return std::nullopt;
}

std::optional<Unit> find_unit(std::string_view symbol, Dimension dim) {
  switch (dim) {
  case Dimension::bandwidth:
    return find_unit(symbol, kBandwidthUnits);
  case Dimension::bytes:
    return find_unit(symbol, kByteUnits);
  case Dimension::time:
    return find_unit(symbol, kTimeUnits);
  case Dimension::flop_rate:
    return find_unit(symbol, kFlopRateUnits);
  case Dimension::duration:
    return find_unit(symbol, kDurationUnits);
  case Dimension::power:
    return find_unit(symbol, kPowerUnits);
  case Dimension::carbon_intensity:
    return find_unit(symbol, kCarbonUnits);
  }
  return std::nullopt;
}

} // namespace

std::optional<double> parse_quantity(std::string_view text, Dimension dim) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  // from_chars accepts neither a leading '+' nor hex by default; "inf" and "nan" are filtered below.
  double number = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(begin, end, number, std::chars_format::general);
  if (ec != std::errc() || !std::isfinite(number)) return std::nullopt;
  const std::string_view unit = trim(std::string_view(rest, static_cast<std::size_t>(end - rest)));
  if (unit.empty()) return number; // a bare number is in base units, like a JSON number
  // The number must be followed by the unit, optionally after blanks: "10 Gbps" but not "10Gbps extra".
  const auto u = find_unit(unit, dim);
  if (!u) return std::nullopt;
  // "1e300Tbps" is finite as written and infinite in bytes/s: refused like any number beyond a double.
  const double value = number * u->multiply / u->divide;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::string describe(Dimension dim) {
  switch (dim) {
  case Dimension::bandwidth:
    return "a bandwidth such as \"10Gbps\" or \"25GB/s\"";
  case Dimension::bytes:
    return "a size such as \"25MiB\" or \"16GB\"";
  case Dimension::time:
    return "a time such as \"5us\" or \"1.5ms\"";
  case Dimension::flop_rate:
    return "a FLOP rate such as \"125TFLOPS\" or \"15.7 TFLOP/s\"";
  case Dimension::duration:
    return "a duration such as \"90s\", \"30min\", \"2h\", \"54d\" or \"5y\"";
  case Dimension::power:
    return "a power such as \"700W\" or \"2.8kW\"";
  case Dimension::carbon_intensity:
    return "a carbon intensity such as \"380 g/kWh\" or \"0.4 kg/kWh\"";
  }
  return "a quantity";
}

} // namespace dtsim::scenario
