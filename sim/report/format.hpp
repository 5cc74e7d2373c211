#pragma once
// Figures with their units, scaled for reading: "142.3 ms", "97.6 MiB", "9.41 Gbps".
#include "sim/plan/plan.hpp"

#include <string>

namespace dtsim::report {

// A figure with about `digits` significant digits and no exponent: "0.7478", "123.5", "20991" (tables of mixed
// magnitudes).
std::string significant(double value, int digits = 4);
// The quantities in the units io/units.hpp picks, as the HTML report shows them.
std::string format_seconds(double seconds);            // "812.50 us", "1.250 s", "52.4 min", "3.10 h", "12.50 d"
std::string format_bytes(double bytes);                // binary prefixes (MiB, GiB)
std::string format_bandwidth(double bytes_per_second); // network convention: bits per second (Gbps)
std::string format_rate(double per_second, const std::string& unit); // "1234.5 images/s"
std::string format_percent(double fraction);
std::string format_power(double watts);   // "689 W", "5.84 kW", "12.3 MW"
std::string format_energy(double kwh);    // "5.17 mWh", "312 Wh", "4.21 kWh", "1.53 GWh"
std::string format_co2(double kilograms); // "850 g", "12.4 kg", "1,530 t" of CO2
// A CSV field: quoted, with quotes doubled and newlines flattened.
std::string csv_field(const std::string& text);

// The memory breakdown as report lines: each item with its size and how it was counted, the total against the
// GPU's capacity ("DOES NOT FIT" when over), and what offloading keeps on the host.
std::string format_memory(const plan::MemoryEstimate& memory);

} // namespace dtsim::report
