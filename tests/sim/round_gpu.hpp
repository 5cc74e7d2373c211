#pragma once
// The made-up GPU of the end-to-end tests: round numbers, so that every op time can be written down by hand.
#include "calibration/profile.hpp"

namespace dtsim::test {

// 10 TFLOP/s at 50% for GEMMs, 1 TB/s at 100% for memory-bound kernels, 10 us per launch.
inline calibration::GpuProfile round_gpu() {
  using calibration::Precision;
  calibration::GpuProfile g;
  g.name = "round";
  g.display_name = "round-number GPU";
  g.peak_flops = {{Precision::fp32, 10e12}};
  g.gemm_efficiency = {{Precision::fp32, 0.5}};
  g.conv_efficiency = {{Precision::fp32, 0.5}};
  g.memory_bytes = 64e9;
  g.memory_bandwidth = 1e12;
  g.memory_efficiency = 1.0;
  g.launch_overhead = 10e-6;
  return g;
}

} // namespace dtsim::test
