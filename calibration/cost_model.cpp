#include "calibration/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim::calibration {

namespace {

// The SMs' busy fraction for one tile shape (tile_m x tile_n of C per thread block).
double utilization(double sms, const GemmDims& g, double tile_m, double tile_n) {
  const double tiles = std::ceil(g.m / tile_m) * std::ceil(g.n / tile_n) * g.count;
  // Too few tiles to fill the SMs: the library splits the reduction dimension k across blocks (split-K, as
  // cuBLAS and CUTLASS do for weight gradients, whose m x n is small and k is the batch), each split keeping at
  // least kMinSplitK of k so the partial sums stay worth adding.
  const double splits = tiles >= sms ? 1 : std::clamp(g.k / kMinSplitK, 1.0, std::floor(sms / tiles));
  const double waves = std::ceil(tiles * splits / sms - 1e-9);
  // Every tile of a wave costs a full tile (partial tiles are padded): the SMs' time is waves x one tile's work.
  const double padded = waves * sms * tile_m * tile_n * (g.k / splits);
  return g.m * g.n * g.k * g.count / padded;
}

} // namespace

double wave_utilization(const GpuProfile& gpu, const GemmDims& g) {
  if (gpu.compute_units <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return 1;
  // Libraries pick the tile shape per problem (cuBLAS heuristics, cuDNN's kernels for 64-channel layers): the
  // best of 64 and 128 in each dimension.
  double best = 0;
  for (const double tile_m : {kGemmTile / 2, kGemmTile})
    for (const double tile_n : {kGemmTile / 2, kGemmTile})
      best = std::max(best, utilization(gpu.compute_units, g, tile_m, tile_n));
  return best;
}

// Roofline (Williams, Waterman and Patterson, "Roofline", CACM 2009) with achieved rather than peak rates:
//   time = max(flops / compute_rate, bytes / (memory_bandwidth * memory_efficiency)) + kernels * launch_overhead
// In a measured profile, curves replace the constants: compute_rate = peak * curve(FLOPs) and memory_efficiency =
// memory curve(bytes), both fitted on times with the launch overhead taken out (calibration/fit.hpp).
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
  const EfficiencyCurve* curve = cost.kind == KernelClass::memory ? nullptr : gpu.curve(cost.kind, cost.precision);
  double compute = 0;
  if (curve != nullptr) {
    // A measured curve (calibration/fit.hpp) is the efficiency a kernel of this many FLOPs reached, waves and tile
    // padding included: each GEMM at the curve's value at its FLOPs, and a fused attention kernel, which the probe
    // times whole, at the curve's value at all its FLOPs.
    const double peak = gpu.peak(cost.precision);
    const auto at = [&](double flops) { return flops > 0 ? flops / (peak * curve->at(flops)) : 0.0; };
    if (cost.kind == KernelClass::attention || cost.gemms.empty())
      compute = at(cost.flops);
    else
      for (const auto& g : cost.gemms)
        compute += at(g.flops());
  } else {
    double compute_rate = 0;
    if (cost.kind == KernelClass::memory)
      compute_rate = gpu.peak(Precision::fp32);
    else
      compute_rate = gpu.peak(cost.precision) * gpu.efficiency(cost.kind, cost.precision);
    // Zero work costs no time even in a hand-built profile with a zero rate (0/0 would be NaN).
    compute = cost.flops > 0 ? cost.flops / compute_rate : 0.0;
    if (cost.kind != KernelClass::memory && !cost.gemms.empty()) {
      // Each GEMM at the class rate times the share of SMs its tiles keep busy.
      compute = 0;
      for (const auto& g : cost.gemms)
        if (g.flops() > 0) compute += g.flops() / (compute_rate * wave_utilization(gpu, g));
    }
  }
  // Streaming bytes at the memory curve's efficiency at this many bytes where the profile has one (a measured
  // profile), else at the constant memory efficiency.
  const double memory =
      cost.bytes > 0
          ? cost.bytes / (gpu.memory_bandwidth * gpu.efficiency(KernelClass::memory, cost.precision, cost.bytes))
          : 0.0;
  return std::max(compute, memory) + cost.kernels * gpu.launch_overhead;
}

} // namespace dtsim::calibration
