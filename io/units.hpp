#pragma once
// Every quantity dtsim shows, in one place: for each kind (time, bytes, bandwidth, energy, power, money, CO2), the
// base unit its JSON fields and CSV columns carry in their names (`epoch_seconds`, `memory_bytes_per_gpu`,
// `cost_usd`, `kwh_per_epoch`) and the ladder of units the text and the HTML report show it in. The text's
// formatters (sim/report/format.hpp) and the HTML report (which reads units_document() from the page) pick units by
// the same rule, so one run's figure reads the same in every view: a unit is the largest whose `from` the value
// reaches, and a column or an axis takes the unit of its largest value, so its rows never mix units.
#include <nlohmann/json_fwd.hpp>

#include <span>
#include <string>
#include <string_view>

namespace dtsim::io {

enum class Quantity {
  time,      // seconds: ns, us, ms, s; min, h, d, y for long spans
  bytes,     // bytes: B, KiB, MiB, GiB, TiB, PiB (binary, as memory and NCCL's sizes are counted)
  bandwidth, // bytes per second, shown in bits per second as networks are sold: Mbps, Gbps, Tbps
  energy,    // kWh: mWh, Wh, kWh, MWh, GWh, TWh (one family, never joules beside watt-hours)
  power,     // watts: W, kW, MW, GW
  money,     // USD
  co2,       // kilograms: g, kg, t, kt, Mt
};

struct Unit {
  std::string_view symbol; // "ms"
  double scale = 1;        // base units in one of it: 1e-3 (seconds per ms)
  double from = 0;         // the smallest magnitude, in base units, shown in it
  int decimals = 2;        // digits after the point; -1: three significant figures
};

// The ladder of a quantity, the smallest unit first.
std::span<const Unit> units_of(Quantity quantity);
// The base unit's name as JSON fields and CSV columns carry it: "seconds", "bytes", "bytes_per_second", "kwh",
// "watts", "usd", "kg".
std::string_view base_name(Quantity quantity);

// The largest unit whose `from` |value| reaches (the smallest unit below all of them).
const Unit& unit_for(Quantity quantity, double value);
// One unit for a column or an axis: that of the largest magnitude among `values`.
const Unit& unit_for_all(Quantity quantity, std::span<const double> values);

// "142.35 ms", "97.49 MiB", "9.41 Gbps", "441 Wh", "$3.42": in its own unit, or in `unit` (a column's).
std::string format(Quantity quantity, double value);
std::string format_in(Quantity quantity, const Unit& unit, double value);
// The number alone, in `unit`, with the unit's decimals: "142.35".
std::string number_in(const Unit& unit, double value);

// Every ladder as data, for the HTML report: {"time": {"base": "seconds", "units": [{"symbol": "ns", "scale": 1e-9,
// "from": 0, "decimals": 1}, ...]}, ...}.
nlohmann::json units_document();

} // namespace dtsim::io
