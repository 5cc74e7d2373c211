#include "calibration/sustained_clock.hpp"

#include <algorithm>

namespace dtsim::calibration {

namespace {

// Joules per FLOP of a kernel's math: its class's entry (convolutions run as implicit GEMMs on the GEMM's units), at
// its math precision; 0 where the profile has none.
double joules_per_flop(const GpuProfile::Power& power, KernelClass kind, Precision precision) {
  const KernelClass table = kind == KernelClass::convolution ? KernelClass::gemm : kind;
  const auto by_class = power.joules_per_flop.find(table);
  if (by_class == power.joules_per_flop.end()) return 0;
  const auto it = by_class->second.find(math_precision(precision));
  return it == by_class->second.end() ? 0 : it->second;
}

} // namespace

double kernel_joules(const GpuProfile& gpu, const KernelCost& cost) {
  const auto& power = gpu.power;
  if (!power.sustained_known()) return 0;
  // Memory-bound kernels' arithmetic runs on CUDA cores at a few FLOPs per byte: their bytes are what they cost.
  const double math =
      cost.kind == KernelClass::memory ? 0 : cost.flops * joules_per_flop(power, cost.kind, cost.precision);
  return math + cost.bytes * power.joules_per_byte;
}

double sm_clock_mhz(const GpuProfile::Power& power, double rate) {
  if (power.max_clock_mhz <= 0) return 0;
  if (rate >= 1 || power.rate_at_limit >= 1) return power.max_clock_mhz;
  const double per_rate = (power.max_clock_mhz - power.limit_clock_mhz) / (1 - power.rate_at_limit);
  return std::max(0.0, power.max_clock_mhz - (1 - rate) * per_rate);
}

ClockState sustained_clock(const GpuProfile& gpu, const Stretch& stretch) {
  const auto& power = gpu.power;
  ClockState state;
  state.sm_clock_mhz = sm_clock_mhz(power, 1);
  if (!power.sustained_known() || stretch.seconds <= 0) return state;
  state.demand_watts = power.idle + stretch.joules / stretch.seconds;
  const double headroom = power.math - power.idle; // what work may draw above idle at the limit
  if (state.demand_watts <= power.math || stretch.math_seconds <= 0) return state;
  const double needed = stretch.joules / headroom; // the stretch's shortest time at the limit
  state.capped = true;
  state.rate = stretch.math_seconds / (stretch.math_seconds + needed - stretch.seconds);
  state.sm_clock_mhz = sm_clock_mhz(power, state.rate);
  return state;
}

KernelTime sustained_kernel_timing(const GpuProfile& gpu, const KernelCost& cost) {
  KernelTime t = kernel_timing(gpu, cost);
  const ClockState clock = sustained_clock(gpu, {t.seconds, t.math_seconds, t.joules});
  if (!clock.capped) return t;
  const double seconds = clock.stretched(t.seconds, t.math_seconds);
  t.efficiency *= t.seconds / seconds;
  t.math_seconds /= clock.rate;
  t.seconds = seconds;
  return t;
}

} // namespace dtsim::calibration
