#pragma once
// Sustained clocks: a GPU running training holds its power limit by lowering its SM clock, so compute-bound kernels
// run slower than a short burst shows while memory-bound ones keep their time (HBM has a clock of its own).
//
// The draw of a stretch of back-to-back kernels is the idle draw plus the energy of its work over its time:
//   P = P_idle + J / T,   J = sum over kernels of FLOPs x joules_per_flop(class, precision) + bytes x joules_per_byte
// where the energies are those a loop held at the limit spends (the GPU profile's `power.sustained`, each from an
// op-level measurement: a bf16 GEMM loop at the limit, an fp8 one, fused attention, a copy loop). Where P at the burst
// clocks exceeds what the GPU holds at its limit (`power.math`), the clock falls until it does: the clock-sensitive
// part M of T (math- and L2-bound kernels) stretches by 1/rate, with J unchanged:
//   P_idle + J / (T + M (1/rate - 1)) = P_math  =>  rate = M / (M + J / (P_math - P_idle) - T)
// The power controller averages over tens of milliseconds (measured: back-to-back GEMMs ran at their burst rate for
// 25 ms and began to slow after about 60 ms), longer than one kernel and shorter than a training step, so the
// stretch is a rank's kernels of one iteration, waits for the host included (the GPU idles in them), and time spent
// waiting on communication excluded (a wait longer than the controller's window banks no energy).
//
// The clock shown with it is read off the two measured ends of a bf16 GEMM loop (its maximum at rate 1, and its
// clock at the limit where its math ran at rate_at_limit), in a straight line: a report's figure, not what sets any
// time.
#include "calibration/cost_model.hpp"
#include "calibration/profile.hpp"

namespace dtsim::calibration {

// Energy above the idle draw that one kernel's work costs at the power limit (all its launches): 0 where the profile
// has no sustained figures (or none for the kernel's class and precision: its math is then taken as free).
double kernel_joules(const GpuProfile& gpu, const KernelCost& cost);

// Kernels back to back: their time at burst clocks (waits for the host included), the clock-sensitive part of it,
// and the energy of their work.
struct Stretch {
  double seconds = 0, math_seconds = 0, joules = 0;
  Stretch& operator+=(const Stretch& other) {
    seconds += other.seconds, math_seconds += other.math_seconds, joules += other.joules;
    return *this;
  }
};

struct ClockState {
  double rate = 1;         // the clock-sensitive work's rate over its burst rate, in (0, 1]
  double sm_clock_mhz = 0; // the SM clock that goes with it (0: the profile has no clock figures)
  double demand_watts = 0; // what the stretch would draw at burst clocks
  bool capped = false;     // the power limit set the clock
  double stretched(double seconds, double math_seconds) const { return seconds + math_seconds * (1 / rate - 1); }
};

// The clock a stretch runs at on `gpu`; rate 1 where the profile has no sustained figures or the stretch is empty.
ClockState sustained_clock(const GpuProfile& gpu, const Stretch& stretch);

// The SM clock at `rate` on the line through the profile's two measured ends (0: no clock figures).
double sm_clock_mhz(const GpuProfile::Power& power, double rate);

// One kernel run in a loop long enough to hold the power limit: its time per run (all launches) and what bounds it.
KernelTime sustained_kernel_timing(const GpuProfile& gpu, const KernelCost& cost);

} // namespace dtsim::calibration
