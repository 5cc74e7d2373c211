#include "io/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace dtsim::io {
namespace {

constexpr double kMinute = 60, kHour = 3600, kDay = 86400, kYear = 365 * kDay;
constexpr double kKi = 1024;

// Time: short spans in SI units below a second, seconds to two minutes, then the clock's units, each from twice its
// size, so that no span reads "1.0 h" where "60.0 min" says it closer.
constexpr std::array kTime{Unit{"ns", 1e-9, 0, 1},       Unit{"us", 1e-6, 1e-6, 2},     Unit{"ms", 1e-3, 1e-3, 2},
                           Unit{"s", 1, 1, 3},           Unit{"min", kMinute, 120, 1},  Unit{"h", kHour, 2 * kHour, 2},
                           Unit{"d", kDay, 2 * kDay, 2}, Unit{"y", kYear, 2 * kYear, 1}};
constexpr std::array kBytes{Unit{"B", 1, 0, 0},
                            Unit{"KiB", kKi, kKi, 2},
                            Unit{"MiB", kKi* kKi, kKi* kKi, 2},
                            Unit{"GiB", kKi* kKi* kKi, kKi* kKi* kKi, 2},
                            Unit{"TiB", kKi* kKi* kKi* kKi, kKi* kKi* kKi* kKi, 2},
                            Unit{"PiB", kKi* kKi* kKi* kKi* kKi, kKi* kKi* kKi* kKi* kKi, 2}};
// Bytes per second in bits per second (x 8): 1 Gbps = 1.25e8 B/s.
constexpr std::array kBandwidth{Unit{"Mbps", 1.25e5, 0, 2}, Unit{"Gbps", 1.25e8, 1.25e8, 2},
                                Unit{"Tbps", 1.25e11, 1.25e11, 2}};
// Three significant figures, the next prefix from 999.5 of the last (which would round to 1000).
constexpr std::array kEnergy{Unit{"mWh", 1e-6, 0, -1},       Unit{"Wh", 1e-3, 0.9995e-3, -1},
                             Unit{"kWh", 1, 0.9995, -1},     Unit{"MWh", 1e3, 0.9995e3, -1},
                             Unit{"GWh", 1e6, 0.9995e6, -1}, Unit{"TWh", 1e9, 0.9995e9, -1}};
constexpr std::array kPower{Unit{"W", 1, 0, -1}, Unit{"kW", 1e3, 999.5, -1}, Unit{"MW", 1e6, 999.5e3, -1},
                            Unit{"GW", 1e9, 999.5e6, -1}};
constexpr std::array kMoney{Unit{"USD", 1, 0, 2}};
constexpr std::array kCo2{Unit{"g", 1e-3, 0, -1}, Unit{"kg", 1, 0.9995, -1}, Unit{"t", 1e3, 999.5, -1},
                          Unit{"kt", 1e6, 999.5e3, -1}, Unit{"Mt", 1e9, 999.5e6, -1}};

int decimals_of(const Unit& unit, double shown) {
  if (unit.decimals >= 0) return unit.decimals;
  const double a = std::fabs(shown);
  return a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
}

} // namespace

std::span<const Unit> units_of(Quantity quantity) {
  switch (quantity) {
  case Quantity::time:
    return kTime;
  case Quantity::bytes:
    return kBytes;
  case Quantity::bandwidth:
    return kBandwidth;
  case Quantity::energy:
    return kEnergy;
  case Quantity::power:
    return kPower;
  case Quantity::money:
    return kMoney;
  case Quantity::co2:
    return kCo2;
  }
  return kMoney;
}

std::string_view base_name(Quantity quantity) {
  switch (quantity) {
  case Quantity::time:
    return "seconds";
  case Quantity::bytes:
    return "bytes";
  case Quantity::bandwidth:
    return "bytes_per_second";
  case Quantity::energy:
    return "kwh";
  case Quantity::power:
    return "watts";
  case Quantity::money:
    return "usd";
  case Quantity::co2:
    return "kg";
  }
  return "";
}

const Unit& unit_for(Quantity quantity, double value) {
  const auto units = units_of(quantity);
  const double a = std::fabs(value);
  const Unit* chosen = &units.front();
  for (const auto& unit : units)
    if (a >= unit.from) chosen = &unit;
  return *chosen;
}

const Unit& unit_for_all(Quantity quantity, std::span<const double> values) {
  double largest = 0;
  for (const double v : values)
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
  return unit_for(quantity, largest);
}

std::string number_in(const Unit& unit, double value) {
  const double shown = value / unit.scale;
  return fmt::format("{:.{}f}", shown, decimals_of(unit, shown));
}

std::string format_in(Quantity quantity, const Unit& unit, double value) {
  if (quantity == Quantity::money) return fmt::format("${:.2f}", value);
  return number_in(unit, value) + " " + std::string(unit.symbol);
}

std::string format(Quantity quantity, double value) {
  return format_in(quantity, unit_for(quantity, value), value);
}

nlohmann::json units_document() {
  nlohmann::json out = nlohmann::json::object();
  const std::pair<const char*, Quantity> all[] = {
      {"time", Quantity::time},     {"bytes", Quantity::bytes}, {"bandwidth", Quantity::bandwidth},
      {"energy", Quantity::energy}, {"power", Quantity::power}, {"money", Quantity::money},
      {"co2", Quantity::co2}};
  for (const auto& [name, quantity] : all) {
    auto& ladder = out[name] = {{"base", base_name(quantity)}, {"units", nlohmann::json::array()}};
    for (const auto& u : units_of(quantity))
      ladder["units"].push_back({{"symbol", u.symbol}, {"scale", u.scale}, {"from", u.from}, {"decimals", u.decimals}});
  }
  return out;
}

} // namespace dtsim::io
