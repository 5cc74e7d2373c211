#include "calibration/cost_model.hpp"
#include "calibration/sustained_clock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace dtsim::calibration {

namespace {

// Time of the math and of the memory traffic, without the launch overhead, and whether small tiles' L2 feed set the
// math.
struct Terms {
  double math = 0;
  double memory = 0;
  bool l2 = false;
};

double hbm_seconds(const GpuProfile& gpu, double bytes, Precision p) {
  return bytes > 0 ? bytes / (gpu.memory_bandwidth * gpu.efficiency(KernelClass::memory, p, bytes)) : 0.0;
}

double gemm_bytes(const GemmDims& g, Precision p) {
  if (g.bytes > 0) return g.bytes;
  return g.count * ((g.m * g.k + g.k * g.n) * gemm_input_bytes(p) + g.m * g.n * gemm_output_bytes(p));
}

// Memory-class kernels (activations, normalization, pooling, optimizer steps) do not run on tensor cores: they are
// CUDA-core code, and PyTorch computes their arithmetic in fp32 even for fp16/bf16 tensors (at::opmath_type<at::Half>
// is float). Their math runs at the fp32 peak, a bound that only matters for unusually arithmetic-heavy ones.
Terms memory_terms(const GpuProfile& gpu, const KernelCost& c) {
  return {c.flops > 0 ? c.flops / gpu.peak(Precision::fp32) : 0.0,
          hbm_seconds(gpu, c.bytes, c.precision) / c.stream_share, false};
}

// A measured curve (calibration/fit.hpp) is the efficiency a kernel of this many FLOPs reached, waves and tile padding
// included: each GEMM at the curve's value at its FLOPs, and a fused attention kernel, which the probe times whole, at
// the curve's value at all its FLOPs. An unaligned GEMM (GemmDims::unaligned) at most at the profile's ceiling for it:
// the probe's GEMMs are aligned.
Terms measured_terms(const GpuProfile& gpu, const KernelCost& c, const EfficiencyCurve& curve) {
  const double peak = gpu.peak(c.precision);
  const auto slow = gpu.gemm_unaligned_efficiency.find(math_precision(c.precision));
  const auto at = [&](double flops, bool unaligned) {
    double efficiency = curve.at(flops);
    if (unaligned && slow != gpu.gemm_unaligned_efficiency.end()) efficiency = std::min(efficiency, slow->second);
    return flops > 0 ? flops / (peak * efficiency) : 0.0;
  };
  Terms t{0, hbm_seconds(gpu, c.bytes, c.precision), false};
  if (fused_attention(c.kind) || c.gemms.empty())
    t.math = at(c.flops, false);
  else
    for (const auto& g : c.gemms)
      t.math += at(g.flops(), c.kind == KernelClass::gemm && g.unaligned);
  return t;
}

// GEMMs and convolutions: each GEMM a kernel of its own, its time the longer of its tiles' math and its HBM traffic.
// A fused attention kernel: its tiles' math against the whole kernel's traffic.
Terms modelled_terms(const GpuProfile& gpu, const KernelCost& c, std::optional<double> ceiling_override = {}) {
  const Precision p = math_precision(c.precision);
  const double aligned_ceiling = ceiling_override ? *ceiling_override : gpu.efficiency(c.kind, p);
  const auto slow = gpu.gemm_unaligned_efficiency.find(p);
  if (c.gemms.empty())
    return {c.flops > 0 ? c.flops / (gpu.peak(p) * aligned_ceiling) : 0.0, hbm_seconds(gpu, c.bytes, p), false};
  Terms t;
  double longest = 0; // the GEMM that takes longest says whether L2 bound the math
  for (const auto& g : c.gemms) {
    if (g.flops() <= 0) continue;
    const bool fallback = c.kind == KernelClass::gemm && g.unaligned && slow != gpu.gemm_unaligned_efficiency.end();
    const double ceiling = fallback ? std::min(aligned_ceiling, slow->second) : aligned_ceiling;
    const GemmTiling tiling = gemm_tiling(gpu, g, p, ceiling);
    const double math = tiling.math_seconds;
    if (fused_attention(c.kind)) {
      t.math += math;
    } else {
      // The operands stream while the tiles compute; split-K's reduction follows (memory-bound).
      const double memory = hbm_seconds(gpu, gemm_bytes(g, p), p);
      (math >= memory ? t.math : t.memory) += std::max(math, memory);
      t.memory += tiling.reduction_seconds;
    }
    if (math > longest) {
      longest = math;
      t.l2 = tiling.l2_bound;
    }
  }
  if (fused_attention(c.kind)) t.memory = hbm_seconds(gpu, c.bytes, p);
  return t;
}

} // namespace

std::string_view to_string(Bound b) {
  switch (b) {
  case Bound::math:
    return "math";
  case Bound::hbm:
    return "HBM";
  case Bound::l2:
    return "L2";
  case Bound::launch:
    return "launch";
  }
  return "unknown";
}

KernelCost fused_attention_kernel(KernelClass library, double s, double d, double heads, bool causal, bool backward,
                                  Precision p, double bytes) {
  if (!fused_attention(library))
    throw std::invalid_argument("fused_attention_kernel: the library must be a fused attention kernel class");
  const GemmDims tile{s, d, causal ? s / 2 : s, heads};
  KernelCost k;
  k.kind = library;
  k.precision = p;
  k.gemms.assign(backward ? 5 : 2, tile);
  k.flops = static_cast<double>(k.gemms.size()) * tile.flops();
  k.bytes = bytes;
  k.kernels = backward ? 2 : 1;
  const char* const who = library == KernelClass::cudnn_attention ? "cudnn" : "flash";
  k.name = fmt::format("{} attention {}", who, backward ? "bwd" : "fwd");
  return k;
}

namespace {

// The Winograd form of a 3x3, stride-1 convolution (KernelCost::winograd), where the profile rates it and no measured
// curve (which holds whatever algorithm cuDNN chose) prices convolutions: F(4x4, 3x3) multiplies kWinogradShare of a
// direct convolution's products, so each implicit GEMM's k is that share; the image, output and
// weights move as before (the transforms' own traffic is in the measured efficiency).
std::optional<KernelCost> winograd_form(const GpuProfile& gpu, const KernelCost& c) {
  if (c.kind != KernelClass::convolution || !c.winograd || c.gemms.empty()) return std::nullopt;
  if (!gpu.winograd_efficiency.contains(math_precision(c.precision)) || gpu.curve(c.kind, c.precision))
    return std::nullopt;
  KernelCost w = c;
  for (auto& g : w.gemms)
    g.k *= kWinogradShare;
  w.flops = c.flops * kWinogradShare;
  return w;
}

KernelTime timing_of(const GpuProfile& gpu, const KernelCost& c, const Terms& t) {
  // Per GEMM the longer term counted; for one kernel the longer of the two.
  const bool summed =
      c.kind != KernelClass::memory && !fused_attention(c.kind) && !c.gemms.empty() && !gpu.curve(c.kind, c.precision);
  const double busy = summed ? t.math + t.memory : std::max(t.math, t.memory);
  const double overhead = c.kernels * gpu.launch_overhead;
  KernelTime out;
  out.seconds = busy + overhead;
  if (out.seconds <= 0) return out;
  const bool memory_bound = t.memory > t.math;
  out.bound = overhead >= busy ? Bound::launch : memory_bound ? Bound::hbm : t.l2 ? Bound::l2 : Bound::math;
  const bool by_bytes = out.bound == Bound::hbm || (out.bound == Bound::launch && c.flops <= 0);
  const double math_peak = c.kind == KernelClass::memory ? gpu.peak(Precision::fp32) : gpu.peak(c.precision);
  out.efficiency = by_bytes ? c.bytes / out.seconds / gpu.memory_bandwidth : c.flops / out.seconds / math_peak;
  // Per GEMM only the math-bound ones' time (t.math holds just theirs); one kernel's all of it when math bounds it.
  out.math_seconds = summed ? t.math : t.math >= t.memory ? t.math : 0.0;
  out.joules = kernel_joules(gpu, c);
  return out;
}

} // namespace

KernelTime kernel_timing(const GpuProfile& gpu, const KernelCost& c) {
  if (c.flops < 0 || c.bytes < 0 || c.kernels < 0)
    throw std::invalid_argument(
        fmt::format("kernel_time: negative cost (flops {}, bytes {}, kernels {})", c.flops, c.bytes, c.kernels));
  if (!(c.stream_share > 0 && c.stream_share <= 1))
    throw std::invalid_argument(fmt::format("kernel_time: stream share {} outside (0, 1]", c.stream_share));
  Terms t;
  if (c.kind == KernelClass::memory)
    t = memory_terms(gpu, c);
  else if (const EfficiencyCurve* curve = gpu.curve(c.kind, c.precision))
    t = measured_terms(gpu, c, *curve);
  else
    t = modelled_terms(gpu, c);
  KernelTime direct = timing_of(gpu, c, t);
  // cudnnFind times both algorithms and keeps the faster.
  if (const auto w = winograd_form(gpu, c)) {
    KernelTime winograd =
        timing_of(gpu, *w, modelled_terms(gpu, *w, gpu.winograd_efficiency.at(math_precision(c.precision))));
    winograd.winograd = true;
    if (winograd.seconds < direct.seconds) return winograd;
  }
  return direct;
}

double kernel_time(const GpuProfile& gpu, const KernelCost& cost) {
  return kernel_timing(gpu, cost).seconds;
}

} // namespace dtsim::calibration
