#pragma once
// A measurement file (docs/measurement-format.md), written by dtsim-probe (cuda_probe/) on a real GPU and read by
// `dtsim calibrate`: value types and a strict parser. A malformed file is refused with a CalibrationError naming
// the file, the JSON pointer of the field and what was expected; so is a measurement whose correctness check did
// not pass (a broken kernel must not report a fast time). Fields this version does not know are ignored, so that
// a newer probe's additions do not break an older dtsim.
#include "calibration/error.hpp"
#include "calibration/precision.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

inline constexpr int kMeasurementsVersion = 1;

// Over the timed repetitions of one measurement, in seconds. runs and median are required; the rest are optional
// (0 when absent).
struct TimingStats {
  int runs = 0;
  double median = 0;
  double mean = 0, min = 0, max = 0, stddev = 0;
};

struct GemmMeasurement {
  std::string library; // "cublasLt" (optional)
  Precision precision = Precision::bf16;
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0; // 2 m n k batch as the probe counted them
  TimingStats stats;
};

// Streaming kernels (STREAM's copy, scale, triad); bytes = read + written.
struct MemoryMeasurement {
  std::string op;
  double bytes = 0;
  TimingStats stats;
};

// The probe's own training kernels: elementwise (gelu), softmax, layernorm.
struct KernelMeasurement {
  std::string op;
  Precision precision = Precision::bf16;
  double elements = 0; // 0 when absent
  double bytes = 0;
  TimingStats stats;
};

struct AttentionMeasurement {
  std::string variant; // "plain" (GEMM, softmax, GEMM) or "fused"
  Precision precision = Precision::bf16;
  double batch = 0, heads = 0, sequence = 0, head_dim = 0; // 0 when absent
  bool causal = false;
  double flops = 0;
  TimingStats stats;
};

struct CopyMeasurement {
  std::string direction;  // h2d, d2h, d2d, p2p
  bool pinned = false;    // host memory page-locked (h2d, d2h)
  int src = -1, dst = -1; // devices of a p2p copy (-1: not given)
  double bytes = 0;
  TimingStats stats;
};

struct CollectiveMeasurement {
  std::string op; // all_reduce, all_gather, reduce_scatter, all_to_all
  int ranks = 0;
  double bytes = 0; // as nccl-tests counts them
  std::optional<Precision> precision;
  TimingStats stats;
};

struct DeviceInfo {
  std::string name; // cudaDeviceProp::name, "NVIDIA H100 80GB HBM3"
  int sms = 0;
  // Optional (0 or empty when absent).
  int count = 0;
  std::string compute_capability;
  double clock_hz = 0, memory_clock_hz = 0, memory_bus_bits = 0, memory_bytes = 0, l2_bytes = 0;
};

struct MeasurementFile {
  std::string origin; // the file it was read from
  int version = kMeasurementsVersion;
  std::string probe_version; // "unknown" when absent
  std::string date;
  std::string host;
  bool quick = false;
  DeviceInfo device;
  std::string driver_version, cuda_version, cublas_version, nccl_version; // empty when absent

  std::vector<GemmMeasurement> gemms;
  std::vector<MemoryMeasurement> memory;
  std::vector<KernelMeasurement> kernels;
  std::vector<AttentionMeasurement> attention;
  std::vector<CopyMeasurement> copies;
  std::vector<TimingStats> launches; // per kernel of back-to-back empty kernels in a stream
  std::vector<CollectiveMeasurement> collectives;

  // What the probe did not measure, and why (optional top-level "skipped": [{"what", "reason"}]), and kernels whose
  // check failed (optional "failed_checks": [{"what", "error"}]): the probe leaves those out of "measurements", so
  // they only explain what is missing.
  struct Omission {
    std::string what, why;
  };
  std::vector<Omission> skipped, failed_checks;

  std::size_t size() const {
    return gemms.size() + memory.size() + kernels.size() + attention.size() + copies.size() + launches.size() +
           collectives.size();
  }
};

// Parses a measurement document; `origin` names the file in errors. Throws CalibrationError.
MeasurementFile parse_measurements(const std::string& json_text, const std::string& origin);
// Reads and parses a file (an unreadable file is a CalibrationError too).
MeasurementFile load_measurements(const std::string& path);

} // namespace dtsim::calibration
