#pragma once
// Fitting a GPU profile from measurements: efficiency curves, launch overhead, link bandwidths and
// collective alpha-beta costs. Plain functions of plain values; `dtsim calibrate` prints and writes what they give.
//
// Efficiency curves. A point's efficiency is its work over the time it took at the reference rate:
//   efficiency = size / ((median seconds - launch overhead) x rate)
// with size in FLOPs (GEMMs, attention) or bytes moved (memory kernels) and rate the precision's peak FLOP/s or the
// datasheet memory bandwidth. The launch overhead comes out because the cost model adds it back to every kernel
// (calibration/cost_model.cpp): without it a fitted profile would charge small kernels their launch twice. (At least
// a tenth of each time is kept as work, so a time at the launch overhead does not give an unbounded efficiency.)
// The curve is monotone non-decreasing in size and piecewise linear in log10(size): the points, sorted by size
// (equal sizes averaged), go through pool-adjacent-violators (isotonic regression, weighted by points), and each
// pooled block becomes one knot at its mean log10 size with its mean efficiency. Every 5th point by sorted index is
// held back from the fit, and the fit's error is reported on them as the relative error of the predicted time
//   size / (rate x curve(size)) + launch overhead
// against the measured median.
#include "calibration/measurements.hpp"
#include "calibration/profile.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

// A pooled block of pool-adjacent-violators: samples [first, last] (indices into the input) at `value`, their
// weighted mean.
struct IsotonicBlock {
  std::size_t first = 0, last = 0;
  double value = 0;
  double weight = 0;
};
// The non-decreasing sequence closest to `values` in weighted least squares, as blocks of equal values covering the
// input in order. `weights` empty: all 1. Throws std::invalid_argument on mismatched sizes or non-positive weights.
std::vector<IsotonicBlock> pool_adjacent_violators(const std::vector<double>& values,
                                                   const std::vector<double>& weights = {});

struct EfficiencySample {
  double size = 0;       // FLOPs or bytes (> 0)
  double efficiency = 0; // fraction of the reference rate
};
// The monotone curve through the samples (any order): knots at the pooled blocks' mean log10 size.
EfficiencyCurve fit_monotone_curve(std::vector<EfficiencySample> samples);

// One timed kernel: its size (FLOPs or bytes) and median time.
struct TimedSample {
  double size = 0;
  double seconds = 0;
};

// Which points a fit holds back: it orders a group by size, then by time (stably), and holds back the point at sorted
// index i when (i + 1) is a multiple of `every` (0: none). Returns the held-back points' positions in `samples` as
// given, in sorted order. fit_efficiency_curve and `dtsim validate --measurements` both use it.
std::vector<std::size_t> held_back_positions(const std::vector<TimedSample>& samples, std::size_t every);

struct CurveFitOptions {
  double rate = 0;                 // FLOP/s or bytes/s that efficiency 1 stands for
  double launch_overhead = 0;      // seconds taken out of each time (the cost model adds them back)
  std::size_t hold_back_every = 5; // every n-th point by sorted size is held back (0: none)
};

struct CurveFit {
  EfficiencyCurve curve;
  std::size_t fitted = 0, held_back = 0;
  double min_size = 0, max_size = 0;
  // Over the held-back points: |predicted - measured| / measured time (fractions); absent when none was held back.
  std::optional<double> median_error, max_error;
};

// Throws std::invalid_argument without samples or with a non-positive rate, size or time.
CurveFit fit_efficiency_curve(std::vector<TimedSample> samples, const CurveFitOptions& options);
// The efficiency one timed sample shows (launch overhead taken out, as the fit does).
double sample_efficiency(const TimedSample& s, const CurveFitOptions& options);
// The time a curve predicts for a kernel of `size`, launch overhead included.
double predicted_seconds(const EfficiencyCurve& curve, double size, const CurveFitOptions& options);

// time = alpha + beta x bytes, by least squares on the relative error (each point weighted 1 / time^2, so the
// latency-bound small sizes count as much as the bandwidth-bound large ones). alpha is kept >= 0.
struct AlphaBeta {
  double alpha = 0; // seconds
  double beta = 0;  // seconds per byte
  std::size_t points = 0;
  double median_error = 0, max_error = 0;                      // relative errors of the fitted times, over the points
  double bandwidth() const { return beta > 0 ? 1 / beta : 0; } // bytes/s
};
// Throws std::invalid_argument with fewer than two distinct sizes or times that do not grow with size.
AlphaBeta fit_alpha_beta(const std::vector<TimedSample>& samples);

// --- A whole measurement file ---

enum class CurveGroup : std::uint8_t { gemm, attention_fused, attention_plain, memory, kernel };

struct NamedCurveFit {
  CurveGroup group = CurveGroup::gemm;
  std::optional<Precision> precision; // none for memory
  std::string op;                     // the probe kernel (kernel group): elementwise, softmax, layernorm
  std::string label;                  // "gemm bf16", "attention fused bf16", "memory (copy, scale, triad)", ...
  std::string size_unit;              // "FLOPs" or "bytes"
  std::string rate_label;             // what efficiency 1 is: "bf16 peak 989.4 TFLOP/s"
  CurveFitOptions options;
  CurveFit fit;
};

struct BandwidthFit {
  double bytes_per_second = 0;
  std::string how; // "h2d pinned copies of 268435456 bytes: 55.1e9 bytes/s; d2h ...: the faster direction"
};

struct CollectiveFit {
  std::string op;
  int ranks = 0;
  AlphaBeta fit;
};

struct MeasurementFit {
  std::optional<double> launch_overhead; // median of the launch measurements' medians (seconds)
  std::size_t launch_points = 0;
  double launch_used = 0; // taken out of kernel times: the measured figure, else the base profile's
  std::vector<NamedCurveFit> curves;
  std::optional<BandwidthFit> pcie, nvlink;
  std::vector<CollectiveFit> collectives;
  std::vector<std::string> notes; // what was left out and why

  const NamedCurveFit* find(CurveGroup group, std::optional<Precision> precision) const;
};

// Fits everything the file measured; `base` gives the peaks and the datasheet bandwidth the efficiencies are of.
MeasurementFit fit_measurements(const MeasurementFile& m, const GpuProfile& base);

// A measured profile: `base`'s peaks, capacities, datasheet bandwidth, convolution efficiencies and collective step
// overhead; the fit's curves (GEMM per precision, fused attention per precision, memory), launch overhead, memory
// efficiency (the memory curve's plateau), PCIe and NVLink bandwidths and the device's SM count; sources naming
// each fitted item and how it was fitted. Curve efficiencies above what the format allows (1 for compute kernels,
// 4 for memory) are capped, with a note added to `notes`.
GpuProfile measured_profile(const GpuProfile& base, const MeasurementFile& m, const MeasurementFit& fit,
                            const std::string& name, const std::string& measurements_path,
                            std::vector<std::string>* notes = nullptr);

// The shipped profile whose GPU a device name ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB") is; nullopt if
// none matches. An A100 whose name gives no memory size is told by `memory_bytes` (0: unknown -> nullopt).
std::optional<std::string> default_base_profile(const std::string& device_name, double memory_bytes = 0);

} // namespace dtsim::calibration
