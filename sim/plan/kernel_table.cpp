#include "sim/plan/kernel_table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::plan::detail {

namespace {

std::string_view kind_name(calibration::KernelClass k) {
  switch (k) {
  case calibration::KernelClass::gemm:
    return "gemm";
  case calibration::KernelClass::convolution:
    return "convolution";
  case calibration::KernelClass::attention:
    return "attention";
  case calibration::KernelClass::cudnn_attention:
    return "cudnn attention";
  case calibration::KernelClass::memory:
    return "memory";
  }
  return "unknown";
}

// "2048x3072x768" (m x n x k), "x 96" when batched; a fused attention kernel's first tile (its others match); a
// memory kernel's bytes per launch ("12.58 MB").
std::string shape_of(const calibration::KernelCost& k) {
  if (k.gemms.empty()) return fmt::format("{:.4g} MB", k.bytes / k.kernels / 1e6);
  const auto& g = k.gemms.front();
  const std::string mnk = fmt::format("{}x{}x{}", g.m, g.n, g.k);
  return g.count > 1 ? fmt::format("{} x {}", mnk, g.count) : mnk;
}

} // namespace

void KernelTable::add(const calibration::KernelCost& kernel, const calibration::KernelTime& time, double host_wait) {
  if (kernel.kernels <= 0) return;
  const bool memory = kernel.kind == calibration::KernelClass::memory;
  const auto* gemm = kernel.gemms.empty() ? nullptr : &kernel.gemms.front();
  auto [seen, first_seen] =
      seen_.try_emplace(Seen{kernel.name, kernel.kind, kernel.precision, gemm ? gemm->m : 0, gemm ? gemm->n : 0,
                             gemm ? gemm->k : 0, gemm ? gemm->count : 0, gemm ? 0 : kernel.bytes / kernel.kernels},
                        nullptr);
  if (first_seen) {
    const std::string precision{
        calibration::to_string(memory ? calibration::Precision::fp32 : calibration::math_precision(kernel.precision))};
    // A convolution cuDNN runs as a Winograd transform does a quarter of the multiplications (kWinogradShare).
    const std::string kind = time.winograd ? "winograd convolution" : std::string(kind_name(kernel.kind));
    Key key{kernel.name, kind, shape_of(kernel), memory ? std::string() : precision};
    auto [it, fresh] = rows_.try_emplace(key);
    KernelRow& row = it->second;
    if (fresh) {
      row.name = std::get<0>(key);
      row.kind = std::get<1>(key);
      row.shape = std::get<2>(key);
      row.precision = std::get<3>(key);
      row.flops = kernel.flops / kernel.kernels * (time.winograd ? calibration::kWinogradShare : 1);
      row.bytes = kernel.bytes / kernel.kernels;
      row.efficiency = time.efficiency;
      row.bound = std::string(calibration::to_string(time.bound));
    }
    seen->second = &row;
  }
  KernelRow& row = *seen->second;
  row.launches += kernel.kernels;
  row.seconds += time.seconds;
  row.math_seconds += time.math_seconds;
  row.host_wait += host_wait;
  // A kernel the GPU waited longer on than it ran was bound by its launch.
  if (row.host_wait > row.seconds) row.bound = std::string(calibration::to_string(calibration::Bound::launch));
  host_wait_ += host_wait;
}

std::vector<KernelRow> KernelTable::rows() const {
  std::vector<KernelRow> out;
  for (const auto& [key, row] : rows_)
    out.push_back(row);
  std::stable_sort(out.begin(), out.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.seconds + a.host_wait > b.seconds + b.host_wait;
  });
  return out;
}

} // namespace dtsim::plan::detail

namespace dtsim::plan {

BoundSeconds bound_seconds(const std::vector<KernelRow>& kernels) {
  BoundSeconds b;
  for (const auto& k : kernels)
    (k.bound == "math" ? b.math : k.bound == "HBM" || k.bound == "L2" ? b.memory : b.launch) += k.seconds;
  return b;
}

} // namespace dtsim::plan
