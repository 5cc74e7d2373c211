#pragma once
// Compute model v0 (DESIGN.md):
//   time = max(flops / (peak[precision] * eff_compute(kind)), bytes / (mem_bw * eff_mem)) + launch overhead
// a roofline with one achieved-efficiency constant per kernel class.
#include "calibration/profile.hpp"

namespace dtsim::calibration {

struct KernelCost {
  KernelClass kind = KernelClass::memory;
  Precision precision = Precision::fp32;
  double flops = 0; // floating-point operations
  double bytes = 0; // bytes read and written in device memory
  int kernels = 1;  // launches this op takes (each pays the launch overhead)
};

double kernel_time(const GpuProfile& gpu, const KernelCost& cost);

} // namespace dtsim::calibration
