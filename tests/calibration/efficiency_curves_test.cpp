// Measured profiles: efficiency curves and measured provenance in the profile format, their interpolation, and the
// cost model using them, against hand arithmetic.
#include "calibration/cost_model.hpp"
#include "calibration/profile.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace dtsim::calibration {
namespace {

using nlohmann::json;

json measured_profile_doc() {
  return json::parse(R"json({
    "name": "lab", "display_name": "Lab GPU (measured)", "provenance": "measured",
    "measured": {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-22T01:30:00Z", "probe_version": "1.0.0",
                 "measurements": "runs/lab.json"},
    "sources": ["fitted"],
    "peak_flops": {"fp32": 20e12, "fp16": 100e12},
    "memory": {"capacity": 16e9, "bandwidth": 1e12, "efficiency": 0.8},
    "links": {"nvlink_bandwidth": 0, "pcie_bandwidth": 16e9},
    "efficiency": {"gemm": {"fp32": 0.5, "fp16": 0.5}, "convolution": {"fp32": 0.25, "fp16": 0.25},
                   "attention": {"fp16": 0.3}},
    "efficiency_curves": {
      "gemm": {"fp16": [[1e9, 0.2], [1e11, 0.6]]},
      "attention": {"fp16": [[1e9, 0.1], [1e12, 0.4]]},
      "memory": [[1e6, 0.5], [1e8, 0.9]]
    },
    "compute_units": 132,
    "launch_overhead": 5e-6,
    "collectives": {"step_overhead": 1e-6}
  })json");
}

std::string error_of(const json& doc) {
  try {
    parse_profile(doc.dump(), "lab.json");
  } catch (const CalibrationError& e) {
    return e.what();
  }
  return "";
}

TEST(ProfileCurves, AProfileWithCurvesParsesAndInterpolates) {
  const GpuProfile g = parse_profile(measured_profile_doc().dump(), "lab.json");
  EXPECT_EQ(g.provenance, "measured");
  ASSERT_TRUE(g.measured.has_value());
  EXPECT_EQ(g.measured->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.measured->measurements, "runs/lab.json");
  // Linear in log10(size): 1e10 lies halfway between 1e9 and 1e11, so 0.2 + (0.6 - 0.2) / 2 = 0.4.
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::fp16, 1e10), 0.4);
  // 3e9: log10 3 = 0.4771 of the way from 1e9 to 1e10, a quarter decade... 0.2 + 0.4 x 0.4771 / 2 = 0.29542.
  EXPECT_NEAR(g.efficiency(KernelClass::gemm, Precision::fp16, 3e9), 0.2 + 0.4 * std::log10(3.0) / 2, 1e-12);
  // Clamped at the ends.
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::fp16, 1e6), 0.2);
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::fp16, 1e15), 0.6);
  // amp runs on the fp16 curve.
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::amp, 1e10), 0.4);
  // No curve: the constant, whatever the size.
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::fp32, 1e10), 0.5);
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::convolution, Precision::fp16, 1e10), 0.25);
  // Memory: 1e7 bytes, halfway between 1e6 and 1e8: 0.7.
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::memory, Precision::fp16, 1e7), 0.7);
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::memory, Precision::fp16), 0.8); // the constant stays
}

TEST(ProfileCurves, EveryShippedProfileStillParsesAndRoundTrips) {
  for (const auto& name : profile_names()) {
    SCOPED_TRACE(name);
    const GpuProfile g = *find_profile(name);
    // Only the measured profiles (dtsim calibrate's fits of calibration/measurements/) carry curves.
    const bool measured = name.ends_with("-measured");
    EXPECT_EQ(g.efficiency_curves.empty(), !measured);
    EXPECT_EQ(g.memory_curve.empty(), !measured);
    EXPECT_EQ(g.measured.has_value(), measured);
    const GpuProfile back = parse_profile(profile_to_json(g), name + ".json");
    EXPECT_EQ(back.sources, g.sources);
    EXPECT_EQ(back.peak_flops, g.peak_flops);
    EXPECT_EQ(back.gemm_efficiency, g.gemm_efficiency);
    EXPECT_EQ(back.attention_efficiency, g.attention_efficiency);
    EXPECT_DOUBLE_EQ(back.memory_bandwidth, g.memory_bandwidth);
    EXPECT_DOUBLE_EQ(back.launch_overhead, g.launch_overhead);
    EXPECT_EQ(back.compute_units, g.compute_units);
  }
  const GpuProfile lab = parse_profile(measured_profile_doc().dump(), "lab.json");
  const std::string text = profile_to_json(lab);
  EXPECT_NE(text.find("[1e9, 0.2]"), std::string::npos) << text; // one knot per line, as written by hand
  const GpuProfile back = parse_profile(text, "lab.json");
  EXPECT_EQ(back.memory_curve.knots, lab.memory_curve.knots);
  EXPECT_EQ(back.measured->date, lab.measured->date);
}

TEST(ProfileCurves, MalformedCurvesAreNamedByTheirPointer) {
  json doc = measured_profile_doc();
  doc["efficiency_curves"]["gemm"]["fp16"] = json::parse("[[1e9, 0.2], [1e9, 0.6]]");
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/gemm/fp16/1/0: expected a size above the previous knot's "
                           "1000000000 (sizes strictly increase), got 1000000000.0");
  doc = measured_profile_doc();
  doc["efficiency_curves"]["gemm"]["fp16"][1][1] = 1.2;
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/gemm/fp16/1/1: expected an efficiency in (0, 1], got 1.2");
  doc = measured_profile_doc();
  doc["efficiency_curves"]["gemm"]["bf16"] = json::parse("[[1e9, 0.2]]");
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/gemm/bf16: /peak_flops has no bf16 entry");
  doc = measured_profile_doc();
  doc["efficiency_curves"]["memory"] = json::array();
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/memory: expected a non-empty array of [size in bytes, "
                           "efficiency] knots, got an empty array");
  doc = measured_profile_doc();
  doc["efficiency_curves"]["memory"][0] = 0.5;
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/memory/0: expected a knot [size in bytes, efficiency], got "
                           "number");
  doc = measured_profile_doc();
  doc["efficiency_curves"]["gemmm"] = json::object();
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/gemmm: unknown field (expected one of: gemm, convolution, "
                           "attention, memory)");
  doc = measured_profile_doc();
  doc["efficiency"].erase("attention");
  EXPECT_EQ(error_of(doc), "lab.json: /efficiency_curves/attention/fp16: /efficiency/attention has no fp16 entry (a "
                           "curve needs the fused kernel's constant)");
}

TEST(ProfileCurves, MeasuredProvenanceNeedsItsObject) {
  json doc = measured_profile_doc();
  doc.erase("measured");
  EXPECT_EQ(error_of(doc), "lab.json: /measured: expected an object with device, date, probe_version and "
                           "measurements, but it is missing");
  doc = measured_profile_doc();
  doc["measured"].erase("probe_version");
  EXPECT_EQ(error_of(doc), "lab.json: /measured/probe_version: expected a string, but it is missing");
  doc = measured_profile_doc();
  doc["provenance"] = "derived";
  EXPECT_EQ(error_of(doc), "lab.json: /measured: only a profile with \"provenance\": \"measured\" has this field");
}

GpuProfile lab() {
  return parse_profile(measured_profile_doc().dump(), "lab.json");
}

TEST(CostModelCurves, AGemmRunsAtTheCurveAtItsFlops) {
  // 1e10 FLOPs: efficiency 0.4 on the curve, so 1e10 / (100e12 x 0.4) = 250 us; memory 1e6 B at the memory curve's
  // 0.5 (1e6 is its first knot): 1e6 / (1e12 x 0.5) = 2 us; time = 250 + 5 (launch) = 255 us.
  EXPECT_DOUBLE_EQ(kernel_time(lab(), {KernelClass::gemm, Precision::fp16, 1e10, 1e6, 1}), 255e-6);
  // With its GEMM's dimensions the curve replaces the class efficiency x wave utilization: a 1000^3 GEMM is 2e9
  // FLOPs, efficiency 0.2 + 0.4 x log10(2) / 2 = 0.260206; 2e9 / (100e12 x 0.260206) = 76.863 us, + 5 us launch.
  // (The wave model alone would give 1000^3 on 132 SMs a utilization of its own; it does not apply here.)
  const double eff = 0.2 + 0.4 * std::log10(2.0) / 2;
  const GemmDims g{1000, 1000, 1000, 1};
  EXPECT_NEAR(kernel_time(lab(), {KernelClass::gemm, Precision::fp16, g.flops(), 0, 1, {g}}),
              2e9 / (100e12 * eff) + 5e-6, 1e-15);
  // Two GEMMs: each at the curve at its own FLOPs (1e9: 0.2; 1e11: 0.6): 1e9 / 20e12 + 1e11 / 60e12 = 50 us + 1666.67
  // us.
  const GemmDims small{500, 1000, 1000, 1}, large{5000, 10000, 1000, 1};
  EXPECT_NEAR(
      kernel_time(lab(), {KernelClass::gemm, Precision::fp16, small.flops() + large.flops(), 0, 0, {small, large}}),
      1e9 / 20e12 + 1e11 / 60e12, 1e-15);
}

TEST(CostModelCurves, FusedAttentionRunsAtTheCurveAtItsTotalFlops) {
  // A fused kernel of 1e11 FLOPs in two tiles: the curve at 1e11 (2/3 of the way from 1e9 to 1e12: 0.1 + 0.3 x 2/3
  // = 0.3), not at each tile's FLOPs: 1e11 / (100e12 x 0.3) = 3.3333 ms, + 5 us.
  const GemmDims tile{1000, 1000, 25000, 1};
  EXPECT_NEAR(kernel_time(lab(), {KernelClass::attention, Precision::fp16, 1e11, 0, 1, {tile, tile}}),
              1e11 / (100e12 * 0.3) + 5e-6, 1e-15);
}

TEST(CostModelCurves, MemoryKernelsUseTheMemoryCurveAtTheirBytes) {
  // 1e7 bytes at 0.7 of 1e12 B/s: 14.2857 us, + 5 us launch.
  EXPECT_DOUBLE_EQ(kernel_time(lab(), {KernelClass::memory, Precision::fp16, 0, 1e7, 1}), 1e7 / 0.7e12 + 5e-6);
  // Past the last knot: 0.9. 1e9 B / 0.9e12 B/s.
  EXPECT_DOUBLE_EQ(kernel_time(lab(), {KernelClass::memory, Precision::fp16, 0, 1e9, 1}), 1e9 / 0.9e12 + 5e-6);
}

TEST(CostModelCurves, WithoutACurveNothingChanges) {
  // fp32 has no curve: the tile model at the class efficiency 0.5; the GEMM's operands, 3 x 1000^2 fp32 elements,
  // at the constant 0.8 (12 MB: 15 us, below the math).
  GpuProfile g = lab();
  const GemmDims dims{1000, 1000, 1000, 1};
  const KernelCost cost{KernelClass::gemm, Precision::fp32, dims.flops(), 12e6, 1, {dims}};
  GpuProfile plain = g;
  plain.efficiency_curves.clear();
  plain.memory_curve = {};
  const double math = dims.flops() / (20e12 * gemm_tiling(g, dims, Precision::fp32, 0.5).efficiency());
  ASSERT_GT(math, 12e6 / 0.8e12);
  const double expected = math + 5e-6;
  EXPECT_DOUBLE_EQ(kernel_time(plain, cost), expected);
  // With the curves but none for fp32: the compute term is the same (the memory term is not binding here).
  EXPECT_DOUBLE_EQ(kernel_time(g, cost), expected);
}

} // namespace
} // namespace dtsim::calibration
