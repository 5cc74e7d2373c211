#pragma once
// Plan-private: rank 0's kernels of one iteration, gathered by distinct kernel (name, kind, shape, precision) as the
// planners price them, for `dtsim run --ops` (plan.hpp: KernelRow).
#include "calibration/cost_model.hpp"
#include "sim/plan/plan.hpp"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dtsim::plan::detail {

class KernelTable {
public:
  KernelTable() = default;
  // Moves keep the rows the lookups point at (a map's nodes move with it); a copy would point into the original's.
  KernelTable(KernelTable&&) = default;
  KernelTable& operator=(KernelTable&&) = default;
  KernelTable(const KernelTable&) = delete;
  KernelTable& operator=(const KernelTable&) = delete;

  // One kernel run `launches` times in the iteration, its GPU time (all launches) and the GPU's wait for the host.
  void add(const calibration::KernelCost& kernel, const calibration::KernelTime& time, double host_wait);
  std::vector<KernelRow> rows() const; // the longest total first (GPU time plus the waits), then by name and shape
  double host_wait() const { return host_wait_; }

private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>; // name, kind, shape, precision
  std::map<Key, KernelRow> rows_;
  // What add() was given, unformatted (name, kind, precision, the first GEMM's m, n, k and count, a memory kernel's
  // bytes per launch), and the row it went to: a planner adds the same few kernels once per micro-batch, so each is
  // formatted into its row's key once (formatting every launch was most of a search's screen).
  using Seen =
      std::tuple<std::string, calibration::KernelClass, calibration::Precision, double, double, double, double, double>;
  std::map<Seen, KernelRow*> seen_;
  double host_wait_ = 0;
};

} // namespace dtsim::plan::detail
