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
  // One kernel run `launches` times in the iteration, its GPU time (all launches) and the GPU's wait for the host.
  void add(const calibration::KernelCost& kernel, const calibration::KernelTime& time, double host_wait);
  std::vector<KernelRow> rows() const; // the longest total first (GPU time plus the waits), then by name and shape
  double host_wait() const { return host_wait_; }

private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>; // name, kind, shape, precision
  std::map<Key, KernelRow> rows_;
  double host_wait_ = 0;
};

} // namespace dtsim::plan::detail
