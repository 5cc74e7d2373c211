#pragma once
// Quantities with units, as a person writes them in a scenario: "10Gbps", "1.25GB/s", "16GiB",
// "5us", "125TFLOPS". Plain numbers are taken in base units (bytes/s, bytes, seconds, FLOP/s).
#include <optional>
#include <string>
#include <string_view>

namespace dtsim::scenario {

// `time` is a latency or a kernel's time (at most a second); `duration` a span of a whole run: "30min", "2h", "54d".
enum class Dimension { bandwidth, bytes, time, flop_rate, duration, power, carbon_intensity };

// Parses `text` as a quantity of `dim`, in base units. nullopt if it is not one (wrong unit, garbage).
std::optional<double> parse_quantity(std::string_view text, Dimension dim);
// What a value of `dim` looks like, for error messages: "a bandwidth such as \"10Gbps\" or \"25GB/s\"".
std::string describe(Dimension dim);

} // namespace dtsim::scenario
