// kernel_time against hand arithmetic.
#include "calibration/cost_model.hpp"

#include <gtest/gtest.h>

namespace dtsim::calibration {
namespace {

// Round numbers so the arithmetic in each test can be checked by eye.
GpuProfile hand_profile() {
  GpuProfile g;
  g.name = "hand";
  g.peak_flops = {{Precision::fp32, 20e12}, {Precision::fp16, 100e12}};
  g.gemm_efficiency = {{Precision::fp32, 0.5}, {Precision::fp16, 0.5}};
  g.conv_efficiency = {{Precision::fp32, 0.25}, {Precision::fp16, 0.25}};
  g.memory_bandwidth = 1e12;
  g.memory_efficiency = 0.8;
  g.launch_overhead = 5e-6;
  return g;
}

TEST(KernelTime, ComputeBoundGemmByHand) {
  // compute: 1e12 FLOP / (100e12 FLOP/s * 0.5) = 0.02 s
  // memory:  1e9 B / (1e12 B/s * 0.8)          = 0.00125 s
  // time = max(0.02, 0.00125) + 1 * 5e-6 = 0.020005 s
  EXPECT_DOUBLE_EQ(kernel_time(hand_profile(), {KernelClass::gemm, Precision::fp16, 1e12, 1e9, 1}), 0.020005);
  // amp runs on the fp16 peak and efficiency: same time
  EXPECT_DOUBLE_EQ(kernel_time(hand_profile(), {KernelClass::gemm, Precision::amp, 1e12, 1e9, 1}), 0.020005);
  // convolution efficiency 0.25: 1e12 / (100e12 * 0.25) = 0.04 s, + 2 launches = 0.04001 s
  EXPECT_DOUBLE_EQ(kernel_time(hand_profile(), {KernelClass::convolution, Precision::fp16, 1e12, 1e9, 2}), 0.04001);
}

// A 3x3, stride-1 convolution cuDNN may run as Winograd's F(4x4, 3x3): a quarter of the multiplications, at the
// profile's Winograd efficiency; cudnnFind keeps whichever is faster. 1e11 FLOPs (m 1e5, n 250, k 2000), fp32:
//   direct:   1e11 / (20e12 x 0.25) = 0.02 s
//   Winograd: 2.5e10 / (20e12 x 0.15) = 0.008333 s, the faster; its image (1e8 B, 1.25e-4 s) streams meanwhile
// each + 5e-6 s of launch. At a Winograd efficiency of 0.05 (2.5e10 / 1e12 = 0.025 s) the direct form is kept.
TEST(KernelTime, AWinogradConvolutionDoesAQuarterOfTheMultiplicationsWhenThatIsFaster) {
  GpuProfile g = hand_profile();
  KernelCost conv{KernelClass::convolution, Precision::fp32, 1e11, 1e8, 1};
  conv.gemms = {{1e5, 250, 2000, 1, 1e8}};
  EXPECT_DOUBLE_EQ(kernel_time(g, conv), 0.020005); // no Winograd rate in the profile
  g.winograd_efficiency = {{Precision::fp32, 0.15}};
  EXPECT_DOUBLE_EQ(kernel_time(g, conv), 0.020005); // not a 3x3, stride-1 convolution
  conv.winograd = true;
  const auto t = kernel_timing(g, conv);
  EXPECT_TRUE(t.winograd);
  EXPECT_NEAR(t.seconds, 2.5e10 / 3e12 + 5e-6, 1e-12);
  EXPECT_NEAR(t.efficiency, 2.5e10 / t.seconds / 20e12, 1e-12); // of the FLOPs it does: never above 1
  g.winograd_efficiency = {{Precision::fp32, 0.05}};
  EXPECT_FALSE(kernel_timing(g, conv).winograd);
  EXPECT_DOUBLE_EQ(kernel_time(g, conv), 0.020005);
}

TEST(KernelTime, MemoryBoundKernelByHand) {
  // memory:  4e9 B / (1e12 B/s * 0.8)         = 0.005 s
  // compute: 1e9 FLOP / 20e12 FLOP/s (fp32 peak, efficiency 1: CUDA cores) = 0.00005 s
  // time = 0.005 + 5e-6 = 0.005005 s
  EXPECT_DOUBLE_EQ(kernel_time(hand_profile(), {KernelClass::memory, Precision::fp16, 1e9, 4e9, 1}), 0.005005);
}

TEST(KernelTime, MemoryClassArithmeticRunsAtTheFp32Peak) {
  // 1e12 FLOP / 20e12 FLOP/s = 0.05 s, whatever the tensor precision (fp16 tensor-core peak is not used).
  EXPECT_DOUBLE_EQ(kernel_time(hand_profile(), {KernelClass::memory, Precision::fp16, 1e12, 0, 0}), 0.05);
}

TEST(KernelTime, RooflineCrossoverAtComputeRateOverMemoryRate) {
  // fp16 gemm: compute rate 100e12 * 0.5 = 50e12 FLOP/s; memory rate 1e12 * 0.8 = 0.8e12 B/s.
  // The terms are equal at arithmetic intensity 50e12 / 0.8e12 = 62.5 FLOP/B.
  const GpuProfile g = hand_profile();
  const double bytes = 1e9;
  const double crossover = 62.5;
  const double memory_time = bytes / 0.8e12; // 0.00125 s
  auto time = [&](double intensity) {
    return kernel_time(g, {KernelClass::gemm, Precision::fp16, intensity * bytes, bytes, 0});
  };
  EXPECT_DOUBLE_EQ(time(crossover), memory_time);
  EXPECT_DOUBLE_EQ(time(crossover / 2), memory_time);     // below: memory-bound, flat in FLOPs
  EXPECT_DOUBLE_EQ(time(crossover * 2), 2 * memory_time); // above: compute-bound, linear in FLOPs
}

TEST(KernelTime, LaunchOverheadIsPaidPerKernel) {
  EXPECT_DOUBLE_EQ(kernel_time(hand_profile(), {KernelClass::memory, Precision::fp32, 0, 0, 3}), 3 * 5e-6);
}

TEST(KernelTime, H100ProfileReproducesItsMeasuredAnchors) {
  const GpuProfile h100 = *find_profile("h100-sxm");
  // 8192^3 bf16 GEMM: 2 * 8192^3 FLOP in 2048 tiles of 256 x 128, 16 waves over 132 SMs (utilization 0.970) at the
  // profile's ceiling 0.83; bytes: A, B and C at 2 bytes each (memory term is far below compute).
  const double n = 8192;
  const double flops = 2 * n * n * n;
  const double t = kernel_time(h100, {KernelClass::gemm, Precision::bf16, flops, 3 * n * n * 2, 1, {{n, n, n, 1}}});
  EXPECT_NEAR(flops / t / 1e12, 798, 8) << "hardware.md: 798 TFLOP/s measured";
  // Device-to-device copy of 1 GiB: 2 GiB read + written; about 3.0 TB/s measured.
  const double bytes = 2.0 * (1 << 30);
  const double copy = kernel_time(h100, {KernelClass::memory, Precision::fp32, 0, bytes, 1});
  EXPECT_NEAR(bytes / copy / 1e12, 3.0, 0.05);
}

TEST(KernelTime, UnsupportedPrecisionOrNegativeWorkThrows) {
  const GpuProfile v100 = *find_profile("v100");
  EXPECT_THROW(kernel_time(v100, {KernelClass::gemm, Precision::bf16, 1e9, 1e6, 1}), std::out_of_range);
  EXPECT_THROW(kernel_time(v100, {KernelClass::gemm, Precision::fp32, -1, 0, 1}), std::invalid_argument);
  EXPECT_THROW(kernel_time(v100, {KernelClass::memory, Precision::fp32, 0, 0, -1}), std::invalid_argument);
}

} // namespace
} // namespace dtsim::calibration
