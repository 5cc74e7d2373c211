#include "sim/report/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim::report {

std::string significant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value == 0 ? "0" : fmt::format("{}", value);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return fmt::format("{:.{}f}", value, std::clamp(digits - 1 - magnitude, 0, 9));
}

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a < 1e-12) return "0 s"; // below a picosecond: rounding noise of sums of op times
  if (a < 1e-6) return fmt::format("{:.1f} ns", s * 1e9);
  if (a < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (a < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string format_duration(double s) {
  if (s < 120) return format_seconds(s);
  if (s < 2 * 3600) return fmt::format("{:.1f} min", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.2f} h", s / 3600);
  if (s < 2 * 365 * 86400.0) return fmt::format("{:.2f} d", s / 86400);
  return fmt::format("{:.1f} y", s / (365 * 86400.0));
}

std::string format_bytes(double b) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (std::fabs(b) >= 1024 && i < 5) {
    b /= 1024;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[i]);
}

std::string format_bandwidth(double bytes_per_second) {
  const double bits = bytes_per_second * 8;
  if (bits >= 1e12) return fmt::format("{:.2f} Tbps", bits / 1e12);
  if (bits >= 1e9) return fmt::format("{:.2f} Gbps", bits / 1e9);
  return fmt::format("{:.2f} Mbps", bits / 1e6);
}

std::string format_rate(double per_second, const std::string& unit) {
  return fmt::format("{:.1f} {}/s", per_second, unit);
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100);
}

namespace {
// Three significant figures with an SI prefix from the list, the base unit first.
std::string with_prefix(double value, std::initializer_list<const char*> units) {
  auto unit = units.begin();
  while (std::next(unit) != units.end() && std::fabs(value) >= 999.5) {
    value /= 1000;
    ++unit;
  }
  const int decimals = std::fabs(value) >= 99.95 ? 0 : std::fabs(value) >= 9.995 ? 1 : 2;
  return fmt::format("{:.{}f} {}", value, decimals, *unit);
}
} // namespace

std::string format_power(double watts) {
  return with_prefix(watts, {"W", "kW", "MW", "GW"});
}

std::string format_energy(double kwh) {
  if (kwh < 1e-3) return with_prefix(kwh * 3.6e6, {"J", "kJ"}); // below a watt-hour, joules read better
  return kwh < 1 ? with_prefix(kwh * 1000, {"Wh"}) : with_prefix(kwh, {"kWh", "MWh", "GWh", "TWh"});
}

std::string format_co2(double kilograms) {
  return kilograms < 1 ? with_prefix(kilograms * 1000, {"g"}) : with_prefix(kilograms, {"kg", "t", "kt", "Mt"});
}

} // namespace dtsim::report

namespace dtsim::report {

std::string format_memory(const plan::MemoryEstimate& memory) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value, const std::string& detail) {
    out += fmt::format("  {:<28} {:>10}{}\n", label, value, detail.empty() ? "" : "  " + detail);
  };
  if (memory.items.empty() && memory.host_items.empty()) // a trace's ops (model.trace): nothing says what they hold
    return "  not known: the ops come from a trace, which does not say what memory they hold\n";
  for (const auto& item : memory.items)
    line(item.name, format_bytes(item.bytes), item.detail);
  line("total", format_bytes(memory.total()),
       fmt::format("of {}{}", format_bytes(memory.capacity), memory.fits() ? "" : "  DOES NOT FIT"));
  for (const auto& item : memory.host_items)
    line(item.name + " (host)", format_bytes(item.bytes), item.detail + ", offloaded to host memory");
  return out;
}

std::string csv_field(const std::string& text) {
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? std::string("\"\"") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out + "\"";
}

} // namespace dtsim::report
