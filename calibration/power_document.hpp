#pragma once
// Internal to calibration/: a profile's "power" object, read and written (calibration/profile.cpp).
//   "power": {"tdp": W, "idle": W, "math": W, "memory": W,          // idle <= memory <= math
//             "sustained": {                                          // optional: clocks at the power limit
//               "joules_per_flop": {"gemm": {precision: J}, "attention": {precision: J}},
//               "joules_per_byte": J,
//               "sm_clock": {"max_mhz": MHz, "at_limit_mhz": MHz, "rate_at_limit": (0, 1]}}}  // optional
#include "calibration/json_reader.hpp"
#include "calibration/profile.hpp"

#include <string>

namespace dtsim::calibration::detail {

GpuProfile::Power read_power(const Reader& r, const json& power, const GpuProfile& g);
std::string power_to_json(const GpuProfile::Power& power); // the "power" field, one line unless it has "sustained"

} // namespace dtsim::calibration::detail
