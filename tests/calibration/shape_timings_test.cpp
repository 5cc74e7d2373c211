// The training-shapes measurement file (calibration/shape_timings.hpp): what it reads, and what it refuses with the
// field's JSON pointer.
#include "calibration/shape_timings.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dtsim::calibration {
namespace {

// One GEMM (2 x 8192 x 1024 x 512 FLOPs), one attention entry and one copy, as training_shapes.py writes them.
std::string document(const std::string& flops = "8589934592") {
  return R"({"device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "cuda_runtime": "13.0", "cublaslt": 130100,
    "cudnn": 91900, "torch": "2.11.0", "enforced_power_limit_w": 700.0, "max_sm_clock_mhz": 1980, "date": "2026-11-28",
    "gemms": [{"label": "x forward", "m": 8192, "n": 1024, "k": 512, "orient": "forward", "dtype": "bf16",
               "flops": )" +
         flops + R"(, "burst": {"median_s": 2e-5},
               "sustained": {"median_s": 2.5e-5, "telemetry": {"sm_clock_median_mhz": 1400, "power_median_w": 690}}}],
    "attention": [{"seq": 2048, "heads": 32, "head_dim": 128, "batch": 8, "backend": "FLASH_ATTENTION",
                   "causal": true, "part": "forward_backward", "flops": 1e12, "burst": {"median_s": 4e-3}}],
    "copy": [{"label": "copy", "bytes_read_plus_written": 8589934592, "eager": true, "burst": {"median_s": 2.8e-3},
              "sustained": {"median_s": 2.8e-3}}]})";
}

TEST(ShapeTimings, ReadsEachKindWithItsTimings) {
  const auto t = parse_shape_timings(document(), "shapes.json");
  EXPECT_EQ(t.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.cublaslt, "130100");
  EXPECT_DOUBLE_EQ(t.power_limit_w, 700);
  ASSERT_EQ(t.points.size(), 3u);
  const auto& g = t.points[0];
  EXPECT_EQ(g.kind, KernelClass::gemm);
  EXPECT_EQ(g.layout, "forward");
  EXPECT_DOUBLE_EQ(g.burst.seconds, 2e-5);
  EXPECT_DOUBLE_EQ(g.sustained.sm_clock_mhz, 1400);
  EXPECT_DOUBLE_EQ(g.sustained.watts, 690);
  const auto& a = t.points[1];
  EXPECT_EQ(a.kind, KernelClass::attention);
  EXPECT_TRUE(a.backward);
  EXPECT_DOUBLE_EQ(a.sustained.seconds, 0); // not measured held at the limit
  EXPECT_TRUE(t.points[2].eager);
}

TEST(ShapeTimings, RefusesWhatDoesNotAddUpNamingTheField) {
  try {
    parse_shape_timings(document("8e9"), "shapes.json");
    FAIL() << "FLOPs that are not 2 m n k were accepted";
  } catch (const CalibrationError& e) {
    EXPECT_EQ(e.pointer(), "/gemms/0/flops");
  }
  auto text = document();
  text.replace(text.find("\"median_s\": 2e-5"), 16, "\"median_s\": -1.0");
  try {
    parse_shape_timings(text, "shapes.json");
    FAIL() << "a negative time was accepted";
  } catch (const CalibrationError& e) {
    EXPECT_EQ(e.pointer(), "/gemms/0/burst/median_s");
  }
}

} // namespace
} // namespace dtsim::calibration
