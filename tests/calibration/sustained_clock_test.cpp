// Sustained clocks (calibration/sustained_clock.hpp) against hand arithmetic on a round-number GPU.
#include "calibration/profile.hpp"
#include "calibration/sustained_clock.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dtsim::calibration {
namespace {

// The message a profile's text is refused with ("" and a failure where it is accepted).
std::string refusal(const std::string& text, const char* what) {
  try {
    parse_profile(text, "bad.json");
  } catch (const CalibrationError& e) {
    return e.what();
  }
  ADD_FAILURE() << what << " was accepted";
  return "";
}

// 1000 TFLOP/s bf16, GEMMs at 80% (no SM count: no waves), 3 TB/s at 100%, no launch cost. Idle 100 W; a GPU at its
// limit holds 700 W; work costs 0.75 pJ per bf16 GEMM FLOP, 2 pJ per attention FLOP and 100 pJ per byte of HBM.
GpuProfile round_gpu() {
  GpuProfile g;
  g.name = "round";
  g.peak_flops = {{Precision::fp32, 50e12}, {Precision::bf16, 1000e12}};
  g.gemm_efficiency = {{Precision::fp32, 1}, {Precision::bf16, 0.8}};
  g.conv_efficiency = g.gemm_efficiency;
  g.attention_efficiency = {{Precision::bf16, 0.4}};
  g.memory_bandwidth = 3e12;
  g.memory_efficiency = 1;
  g.power.tdp = 700;
  g.power.idle = 100;
  g.power.math = 700;
  g.power.memory = 400;
  g.power.joules_per_flop = {{KernelClass::gemm, {{Precision::bf16, 0.75e-12}}},
                             {KernelClass::attention, {{Precision::bf16, 2e-12}}}};
  g.power.joules_per_byte = 100e-12;
  g.power.max_clock_mhz = 1980;
  g.power.limit_clock_mhz = 1365;
  g.power.rate_at_limit = 0.854;
  return g;
}

// A GEMM of 1e12 FLOPs moving 0.3 GB: 1.25 ms at 800 TFLOP/s in a burst (its bytes take 0.1 ms).
KernelCost gemm() {
  return {KernelClass::gemm, Precision::bf16, 1e12, 0.3e9, 1};
}

TEST(SustainedClock, KernelEnergyIsItsFlopsAndBytes) {
  // 1e12 x 0.75 pJ + 0.3e9 x 100 pJ = 0.75 + 0.03 J
  EXPECT_DOUBLE_EQ(kernel_joules(round_gpu(), gemm()), 0.78);
  // A memory kernel: its bytes only (its CUDA-core FLOPs are not counted); a convolution at the GEMM's figure.
  EXPECT_DOUBLE_EQ(kernel_joules(round_gpu(), {KernelClass::memory, Precision::bf16, 1e9, 3e9, 1}), 0.3);
  EXPECT_DOUBLE_EQ(kernel_joules(round_gpu(), {KernelClass::convolution, Precision::bf16, 1e12, 0, 1}), 0.75);
  // fp32 has no figure: its math costs nothing here (it runs at burst clocks).
  EXPECT_DOUBLE_EQ(kernel_joules(round_gpu(), {KernelClass::gemm, Precision::fp32, 1e12, 0, 1}), 0);
}

TEST(SustainedClock, GemmLoopRunsAtTheRateThePowerLimitAllows) {
  const auto gpu = round_gpu();
  const KernelTime burst = kernel_timing(gpu, gemm());
  EXPECT_DOUBLE_EQ(burst.seconds, 1.25e-3);
  EXPECT_DOUBLE_EQ(burst.math_seconds, 1.25e-3);
  // At burst clocks it would draw 100 + 0.78 J / 1.25 ms = 724 W > 700 W: the clock falls until the loop draws 700 W,
  // 0.78 J / (700 - 100) W = 1.3 ms a GEMM. Its operands draw 0.03 J / 1.3 ms = 23.08 W of the 600, leaving
  // 576.92 W for math at 0.75 pJ a FLOP: 769.23 TFLOP/s, what 1e12 FLOPs / 1.3 ms is.
  const auto clock = sustained_clock(gpu, {burst.seconds, burst.math_seconds, burst.joules});
  EXPECT_TRUE(clock.capped);
  EXPECT_DOUBLE_EQ(clock.demand_watts, 724);
  EXPECT_NEAR(clock.rate, 1.25 / 1.3, 1e-12);
  const KernelTime held = sustained_kernel_timing(gpu, gemm());
  EXPECT_NEAR(held.seconds, 1.3e-3, 1e-15);
  EXPECT_NEAR(1e12 / held.seconds, (600 - 0.03 / 1.3e-3) / 0.75e-12, 1e3);
  // The clock on the line through (rate 1, 1980 MHz) and (0.854, 1365 MHz).
  EXPECT_NEAR(clock.sm_clock_mhz, 1980 - (1 - 1.25 / 1.3) * (1980 - 1365) / (1 - 0.854), 1e-9);
}

TEST(SustainedClock, MemoryBoundKernelKeepsItsTimeWhateverTheLimit) {
  // 3 GB at 3 TB/s: 1 ms, drawing 100 + 0.3 J / 1 ms = 400 W.
  const KernelCost copy{KernelClass::memory, Precision::bf16, 0, 3e9, 1};
  auto gpu = round_gpu();
  EXPECT_DOUBLE_EQ(sustained_kernel_timing(gpu, copy).seconds, 1e-3);
  gpu.power.math = 300; // a limit below its draw: nothing the SM clock sets, so nothing to slow
  EXPECT_FALSE(sustained_clock(gpu, {1e-3, 0, 0.3}).rate < 1);
  EXPECT_DOUBLE_EQ(sustained_kernel_timing(gpu, copy).seconds, 1e-3);
}

TEST(SustainedClock, AStretchAveragesItsKernelsDraws) {
  const auto gpu = round_gpu();
  // The GEMM (1.25 ms, 0.78 J) and the copy (1 ms, 0.3 J) back to back draw 100 + 1.08 J / 2.25 ms = 580 W: under the
  // limit, so the GEMM keeps its burst rate in this mix although alone it would not.
  const Stretch mix{2.25e-3, 1.25e-3, 1.08};
  EXPECT_FALSE(sustained_clock(gpu, mix).capped);
  EXPECT_DOUBLE_EQ(sustained_clock(gpu, mix).rate, 1);
  // Held to 500 W, the stretch needs 1.08 J / 400 W = 2.7 ms: the copy keeps its 1 ms, the GEMM's 1.25 ms becomes 1.7.
  auto capped = gpu;
  capped.power.math = 500;
  const auto clock = sustained_clock(capped, mix);
  EXPECT_NEAR(clock.rate, 1.25 / 1.7, 1e-12);
  EXPECT_NEAR(clock.stretched(1.25e-3, 1.25e-3), 1.7e-3, 1e-15);
  EXPECT_NEAR(clock.stretched(mix.seconds, mix.math_seconds), 2.7e-3, 1e-15);
}

TEST(SustainedClock, WithoutSustainedFiguresKernelsRunAtBurstClocks) {
  auto gpu = round_gpu();
  gpu.power.joules_per_flop.clear();
  EXPECT_DOUBLE_EQ(kernel_joules(gpu, gemm()), 0);
  EXPECT_DOUBLE_EQ(sustained_kernel_timing(gpu, gemm()).seconds, 1.25e-3);
  EXPECT_FALSE(sustained_clock(gpu, {1.25e-3, 1.25e-3, 0.78}).capped);
}

TEST(SustainedClock, ShippedHopperGemmLoopHoldsItsMeasuredRate) {
  // The H100 profile's bf16 8192^3 loop: its figures come from a 25 s loop at 694.7 W and 675.0 TFLOP/s
  // (calibration/measurements/h100-sxm-2026-11-27-power-draw.json); priced back, the loop holds that rate within the
  // rounding of the profile's constants (three significant digits).
  const auto gpu = *find_profile("h100-sxm");
  const double n = 8192;
  const KernelCost loop{KernelClass::gemm, Precision::bf16, 2 * n * n * n, 3 * n * n * 2, 1, {{n, n, n}}};
  EXPECT_NEAR(loop.flops / sustained_kernel_timing(gpu, loop).seconds / 1e12, 675.0, 675.0 * 0.01);
}

// cuDNN's attention runs at a rate of its own, so it needs an energy of its own: a profile that rates it without one
// would let its FLOPs draw nothing at the limit.
TEST(SustainedClock, CudnnAttentionCarriesItsOwnEnergy) {
  const auto gpu = *find_profile("h100-sxm");
  const auto back = parse_profile(profile_to_json(gpu), "round-trip");
  EXPECT_EQ(back.cudnn_attention_efficiency, gpu.cudnn_attention_efficiency);
  EXPECT_EQ(back.power.joules_per_flop, gpu.power.joules_per_flop);
  auto text = profile_to_json(gpu);
  const std::string table = ", \"attention_cudnn\": {\"fp16\": 1.289e-12, \"bf16\": 1.289e-12}";
  const auto at = text.find(table);
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, table.size());
  const auto message = refusal(text, "a cuDNN attention rate without its energy");
  EXPECT_NE(message.find("/power/sustained/joules_per_flop/attention_cudnn/fp16"), std::string::npos) << message;
}

TEST(SustainedClock, ProfileRoundTripsItsSustainedFigures) {
  auto gpu = round_gpu();
  gpu.display_name = "round";
  gpu.provenance = "derived";
  gpu.sources = {"hand"};
  gpu.memory_bytes = 80e9;
  gpu.pcie_bandwidth = 63e9;
  const auto back = parse_profile(profile_to_json(gpu), "round-trip");
  EXPECT_EQ(back.power.joules_per_flop, gpu.power.joules_per_flop);
  EXPECT_DOUBLE_EQ(back.power.joules_per_byte, 100e-12);
  EXPECT_DOUBLE_EQ(back.power.limit_clock_mhz, 1365);
  EXPECT_DOUBLE_EQ(back.power.rate_at_limit, 0.854);
}

TEST(SustainedClock, MalformedFiguresNameTheirPointer) {
  auto text = profile_to_json(*find_profile("h100-sxm"));
  const auto at = text.find("\"at_limit_mhz\": 1365");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 20, "\"at_limit_mhz\": 2500");
  const auto above = refusal(text, "a clock at the limit above the maximum");
  EXPECT_NE(above.find("/power/sustained/sm_clock/at_limit_mhz"), std::string::npos) << above;
  auto unknown = profile_to_json(*find_profile("h100-sxm"));
  const std::string attention = "\"attention\": {\"fp16\": 2.16e-12";
  unknown.replace(unknown.find(attention), 11, "\"softmax\"");
  const auto class_name = refusal(unknown, "an unknown kernel class");
  EXPECT_NE(class_name.find("/power/sustained/joules_per_flop"), std::string::npos) << class_name;
  // An energy past any GPU's would drive the clock at the limit, and every kernel's time, to infinity.
  auto absurd = profile_to_json(*find_profile("h100-sxm"));
  absurd.replace(absurd.find(attention), attention.size(), "\"attention\": {\"fp16\": 1e300");
  const auto energy = refusal(absurd, "1e300 joules per FLOP");
  EXPECT_NE(energy.find("/power/sustained/joules_per_flop/attention/fp16"), std::string::npos) << energy;
  EXPECT_NE(energy.find("expected at most 1e-09 joules per FLOP"), std::string::npos) << energy;
}

} // namespace
} // namespace dtsim::calibration
