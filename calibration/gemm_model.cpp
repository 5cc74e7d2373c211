#include "calibration/gemm_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace dtsim::calibration {

namespace {

// One tile shape: tiles of C (times split-K splits) in waves over the SMs, every tile of a wave paying a full tile's
// work (partial tiles are padded), so the SMs' time is waves x one tile's work.
GemmTiling tile(double sms, const GemmDims& g, double tile_m, double tile_n) {
  GemmTiling t;
  t.tile_m = tile_m;
  t.tile_n = tile_n;
  const double tiles = std::ceil(g.m / tile_m) * std::ceil(g.n / tile_n) * g.count;
  // Too few tiles to fill the SMs: the library splits the reduction dimension k across blocks (split-K, as cuBLAS and
  // CUTLASS do for weight gradients, whose m x n is small and k is the batch), each split keeping at least kMinSplitK
  // of k so the partial sums stay worth adding.
  t.splits = tiles >= sms ? 1 : std::clamp(g.k / kMinSplitK, 1.0, std::floor(sms / tiles));
  t.waves = std::ceil(tiles * t.splits / sms - 1e-9);
  const double padded = t.waves * sms * tile_m * tile_n * (g.k / t.splits);
  t.utilization = g.m * g.n * g.k * g.count / padded;
  return t;
}

} // namespace

double gemm_input_bytes(Precision p) {
  switch (math_precision(p)) {
  case Precision::fp8:
    return 1;
  case Precision::fp16:
  case Precision::bf16:
    return 2;
  default:
    return 4;
  }
}

bool off_16_bytes(std::initializer_list<double> dims, Precision p) {
  const double elements = 16 / gemm_input_bytes(p);
  return std::any_of(dims.begin(), dims.end(), [&](double d) { return std::fmod(d, elements) != 0; });
}

double gemm_output_bytes(Precision p) {
  return math_precision(p) == Precision::fp8 ? 2 : gemm_input_bytes(p);
}

GemmTiling gemm_tiling(const GpuProfile& gpu, const GemmDims& g, Precision precision, double ceiling) {
  const double peak = gpu.peak(precision);
  GemmTiling best;
  best.tile_efficiency = ceiling;
  best.math_seconds = g.flops() / (peak * ceiling);
  if (gpu.compute_units <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return best;
  const double sms = gpu.compute_units;
  // Each SM's share of the L2 bandwidth feeds its tile: 2 tm tn FLOPs per (tm + tn) elements of A and B read per unit
  // of k. The SM's math runs at peak / SMs.
  const double feed = gpu.l2_bandwidth / sms;
  const double sm_peak = peak / sms;
  const double stream = gpu.memory_bandwidth * gpu.memory_efficiency;
  std::optional<GemmTiling> chosen;
  for (const auto& [tm, tn] : kGemmTiles) {
    GemmTiling t = tile(sms, g, tm, tn);
    t.tile_efficiency = ceiling;
    if (feed > 0) {
      const double fed = feed * 2 * tm * tn / ((tm + tn) * gemm_input_bytes(precision)) / sm_peak;
      t.l2_bound = fed < ceiling;
      t.tile_efficiency = std::min(ceiling, fed);
    }
    t.math_seconds = g.flops() / (peak * t.efficiency()) + t.waves * gpu.memory_latency;
    if (t.splits > 1) {
      const double partials = g.m * g.n * g.count;
      t.reduction_seconds =
          (2 * t.splits * partials * 4 + partials * gemm_output_bytes(precision)) / stream + gpu.launch_overhead;
    }
    if (!chosen || t.seconds() < chosen->seconds()) chosen = t;
  }
  return *chosen;
}

} // namespace dtsim::calibration
