#include "sim/report/format.hpp"

#include "io/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim::report {

std::string significant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value == 0 ? "0" : fmt::format("{}", value);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return fmt::format("{:.{}f}", value, std::clamp(digits - 1 - magnitude, 0, 9));
}

// Each quantity's unit comes from io/units.hpp, as the HTML report's do.
std::string format_seconds(double s) {
  if (std::fabs(s) < 1e-12) return "0 s"; // below a picosecond: rounding noise of sums of op times
  return io::format(io::Quantity::time, s);
}

std::string format_bytes(double b) {
  return io::format(io::Quantity::bytes, b);
}

std::string format_bandwidth(double bytes_per_second) {
  return io::format(io::Quantity::bandwidth, bytes_per_second);
}

std::string format_rate(double per_second, const std::string& unit) {
  return fmt::format("{:.1f} {}/s", per_second, unit);
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100);
}

std::string format_power(double watts) {
  return io::format(io::Quantity::power, watts);
}

std::string format_energy(double kwh) {
  return io::format(io::Quantity::energy, kwh);
}

std::string format_co2(double kilograms) {
  return io::format(io::Quantity::co2, kilograms);
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
