#include "calibration/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dtsim::calibration {

// Roofline (Williams, Waterman and Patterson, "Roofline", CACM 2009) with achieved rather than peak rates:
//   time = max(flops / compute_rate, bytes / (memory_bandwidth * memory_efficiency)) + kernels * launch_overhead
// compute_rate for gemm and convolution kernels is peak(math precision) * efficiency(class, precision): they run
// on tensor cores where the precision allows, and their efficiencies come from the profile.
// Memory-class kernels (activations, normalization, pooling, optimizer steps) do not run on tensor cores:
// they are CUDA-core code, and PyTorch computes their arithmetic in fp32 even for fp16/bf16 tensors
// (at::opmath_type<at::Half> is float). Their compute term therefore uses the fp32 peak with efficiency 1 —
// a bound that only matters for unusually arithmetic-heavy elementwise ops; normally the bytes term wins.
double kernel_time(const GpuProfile& gpu, const KernelCost& cost) {
  if (cost.flops < 0 || cost.bytes < 0 || cost.kernels < 0)
    throw std::invalid_argument(fmt::format("kernel_time: negative cost (flops {}, bytes {}, kernels {})", cost.flops,
                                            cost.bytes, cost.kernels));
  double compute_rate = 0;
  if (cost.kind == KernelClass::memory)
    compute_rate = gpu.peak(Precision::fp32);
  else
    compute_rate = gpu.peak(cost.precision) * gpu.efficiency(cost.kind, cost.precision);
  // Zero work costs no time even in a hand-built profile with a zero rate (0/0 would be NaN).
  const double compute = cost.flops > 0 ? cost.flops / compute_rate : 0.0;
  const double memory = cost.bytes > 0 ? cost.bytes / (gpu.memory_bandwidth * gpu.memory_efficiency) : 0.0;
  return std::max(compute, memory) + cost.kernels * gpu.launch_overhead;
}

} // namespace dtsim::calibration
