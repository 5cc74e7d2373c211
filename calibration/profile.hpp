#pragma once
// A GPU profile: datasheet peaks plus the efficiencies that turn peaks into achieved rates.
// Shipped profiles live in calibration/profiles/*.json, each with its sources; the format is stable
// so that fitted profiles (`dtsim calibrate`, calibration/fit.hpp) can replace the derived ones.
#include "calibration/error.hpp"
#include "calibration/precision.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

// Which efficiency applies to a kernel.
// attention: a fused attention kernel (FlashAttention-2; Dao et al. 2022, Dao 2023), whose GEMMs and softmax run in
// one kernel that never writes the s^2 scores to memory. cudnn_attention: cuDNN's fused attention (its
// F16_arbitrary_seqlen kernels, which Transformer Engine runs on Hopper), the same algorithm with its own measured
// rate and energy.
enum class KernelClass : std::uint8_t { gemm, convolution, memory, attention, cudnn_attention };
// A fused attention kernel of either library: one kernel over tiles of query rows, the scores never in memory.
constexpr bool fused_attention(KernelClass k) {
  return k == KernelClass::attention || k == KernelClass::cudnn_attention;
}

// One knot of a measured efficiency curve: a kernel of `size` (FLOPs for gemm, convolution and attention kernels,
// bytes moved for memory kernels) reaches `efficiency` of the peak (of the datasheet bandwidth for memory kernels).
struct CurveKnot {
  double size = 0;
  double efficiency = 0;
  bool operator==(const CurveKnot&) const = default;
};

// Efficiency as a function of size, fitted from measurements (calibration/fit.hpp): piecewise linear in log10(size)
// between the knots, flat beyond the first and the last.
struct EfficiencyCurve {
  std::vector<CurveKnot> knots; // sizes strictly increasing; empty: no curve
  bool empty() const { return knots.empty(); }
  double at(double size) const;
  double plateau() const { return knots.empty() ? 0 : knots.back().efficiency; }
};

// Where a measured profile came from (`"provenance": "measured"`).
struct MeasuredProvenance {
  std::string device;        // the probe's device name, "NVIDIA H100 80GB HBM3"
  std::string date;          // when the probe ran (UTC, ISO 8601)
  std::string probe_version; // dtsim-probe's version
  std::string measurements;  // path of the measurement file it was fitted from
};

struct GpuProfile {
  std::string name;                           // preset key, e.g. "v100"
  std::string display_name;                   // "NVIDIA V100 SXM2 16GB"
  std::string provenance;                     // "derived" (datasheets, publications) or "measured"
  std::optional<MeasuredProvenance> measured; // present exactly when provenance is "measured"
  std::vector<std::string> sources;

  std::map<Precision, double> peak_flops; // FLOP/s, dense
  double memory_bytes = 0;                // HBM capacity
  double memory_bandwidth = 0;            // bytes/s, datasheet
  double nvlink_bandwidth = 0;            // bytes/s per direction per GPU (0: no NVLink)
  double pcie_bandwidth = 0;              // bytes/s per direction of the GPU's PCIe link
  // What share of those datasheet rates a link carries as data (NVLink's and PCIe's packet headers and flow
  // control), as NCCL's topology model counts the links (src/graph/topo.h, topo.cc).
  double nvlink_efficiency = 1;
  double pcie_efficiency = 1;
  // CUDA compute capability x 10 (70 Volta, 80 Ampere, 90 Hopper): which of NCCL's tuning tables the GPU reads.
  // 0: not a GPU that runs NCCL (a CPU profile); its collectives run over Gloo or MPI.
  int compute_capability = 0;

  // Fraction of peak that a large GEMM's (or convolution's) tiles reach on the SMs they occupy: the ceiling of the tile
  // model (calibration/gemm_model.hpp), measured at a shape whose waves are known.
  std::map<Precision, double> gemm_efficiency;
  std::map<Precision, double> conv_efficiency;
  // Fused attention kernels' fraction of peak, forward and backward together, where the GPU has them (FlashAttention-2
  // needs Ampere or newer and fp16/bf16); empty: attention runs unfused.
  std::map<Precision, double> attention_efficiency;
  // cuDNN's fused attention's fraction of peak, forward and backward together, where it was measured on this GPU;
  // empty: not known (a framework that prefers it runs FlashAttention-2).
  std::map<Precision, double> cudnn_attention_efficiency;
  // GEMMs with a dimension that is not a whole number of 16-byte vectors (an odd vocabulary) cannot use the vectorized
  // kernels: cuBLAS falls back to alignment-1 kernels, whose rate is this share of the peak at most (measured; empty:
  // not known, such GEMMs priced as aligned ones).
  std::map<Precision, double> gemm_unaligned_efficiency;
  // cuDNN's Winograd convolution of 3x3, stride-1 filters, F(4x4, 3x3) (Lavin and Gray 2016: 36 multiplications for
  // 16 outputs where a direct convolution takes 144, so a quarter of its FLOPs): the share of the peak its batched
  // GEMMs and transforms reach on those FLOPs, where measured (empty: convolutions run as implicit GEMMs only).
  std::map<Precision, double> winograd_efficiency;
  double memory_efficiency = 1.0; // fraction of memory_bandwidth reached by streaming kernels
  double memory_latency = 0;      // seconds of one load from HBM (0: not known); a GEMM wave waits it once
  double l2_bandwidth = 0;        // bytes/s the L2 cache delivers to the SMs (0: not known, tiles never L2-bound)
  // Seconds the GPU spends on every kernel besides its work: the gap between back-to-back kernels and the ramp of
  // each (what a tiny kernel costs when the host keeps the queue full).
  double launch_overhead = 0;
  // Streaming multiprocessors: a GEMM runs in waves of output tiles over them (0: no wave model, GEMMs at
  // their class efficiency whatever their shape).
  int compute_units = 0;
  // Seconds added to every message between GPUs besides the links' latency and NCCL's per-step latency
  // (sim/collectives/nccl.hpp); 0 unless a calibration measured more.
  double collective_step_overhead = 0;
  // Measured efficiency curves (optional): per class (gemm, convolution, attention) and math precision, and one for
  // memory kernels. Where one exists it replaces the constant above (and, for GEMMs, the wave model: a measured
  // curve already contains the waves).
  std::map<KernelClass, std::map<Precision, EfficiencyCurve>> efficiency_curves;
  EfficiencyCurve memory_curve;
  // GPU time to reduce one byte of input in a collective: read both operands, write the sum (3 bytes moved).
  // What the GPU draws, watts (all 0: not known; the run then reports no energy). `math`: running compute-bound
  // kernels (a power-capped GPU draws its limit: an H100's or H200's bf16 GEMM loop held 99% of the 700 W cap with the
  // SM clock throttled); `memory`: streaming from HBM; `idle`: waiting with its clocks up (between kernels, in a
  // pipeline bubble, while a job waits on a restart). The profile's sources say where each figure comes from.
  struct Power {
    double tdp = 0, idle = 0, math = 0, memory = 0;
    // Sustained clocks (calibration/sustained_clock.hpp): the energy above `idle` that work costs at the power limit,
    // from loops run long enough to hold it (`math` is the draw such a loop held): joules per FLOP by kernel class
    // (gemm, attention; convolutions use gemm's) and math precision, and per byte moved through HBM. Empty: kernels
    // run at the clocks of a short burst whatever they draw.
    std::map<KernelClass, std::map<Precision, double>> joules_per_flop;
    double joules_per_byte = 0;
    // The two ends of the SM clock, for reports: its maximum, and the clock a bf16 GEMM loop settled at when it
    // held the limit, where its math ran at `rate_at_limit` of its burst rate.
    double max_clock_mhz = 0, limit_clock_mhz = 0, rate_at_limit = 0;
    bool known() const { return math > 0; }
    bool sustained_known() const { return known() && joules_per_byte > 0 && !joules_per_flop.empty(); }
  } power;
  double reduce_seconds_per_byte() const { return 3.0 / (memory_bandwidth * memory_efficiency); }

  double peak(Precision p) const;                      // throws std::out_of_range with a clear message if unsupported
  double efficiency(KernelClass k, Precision p) const; // the class's constant
  // The curve at `size` where the profile has one for this class and (math) precision, else the constant.
  double efficiency(KernelClass k, Precision p, double size) const;
  // The measured curve of a class and precision (memory: any precision), or nullptr.
  const EfficiencyCurve* curve(KernelClass k, Precision p) const;
  bool has_fused_attention(Precision p) const { return attention_efficiency.contains(math_precision(p)); }
  bool has_cudnn_attention(Precision p) const { return cudnn_attention_efficiency.contains(math_precision(p)); }
};

// Profile by preset name ("v100", "a100-80gb", ...) from the embedded files.
std::optional<GpuProfile> find_profile(const std::string& name);
std::vector<std::string> profile_names();
// A profile file (a calibrated one written by `dtsim calibrate`, or a hand-made one). Throws CalibrationError naming
// the file: it cannot be read, or the JSON pointer of what is wrong in it.
GpuProfile load_profile_file(const std::string& path);
// A shipped profile's name, else the path of a profile file: as given when absolute, else tried relative to each of
// `directories` in order. nullopt when it is neither; CalibrationError when the file it found is not a profile.
std::optional<GpuProfile> resolve_profile(const std::string& name_or_path, const std::vector<std::string>& directories);
// Parses one profile document; `origin` names the file in error messages. Throws CalibrationError.
GpuProfile parse_profile(const std::string& json_text, const std::string& origin);
// The profile as a document parse_profile reads back (two-space indented, knots one per line).
std::string profile_to_json(const GpuProfile& g);

} // namespace dtsim::calibration
