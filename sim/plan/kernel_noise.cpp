#include "sim/plan/kernel_noise.hpp"
#include "sim/plan/gpu_speed.hpp"

#include <cmath>

namespace dtsim::plan {

double synchronization_wait(double sigma, const std::vector<KernelRow>& kernels, const std::map<int, int>& syncs) {
  double total = 0, squares = 0; // T and Q: a row holds `launches` kernels of seconds / launches each
  for (const auto& k : kernels) {
    if (k.launches <= 0 || k.seconds <= 0) continue;
    total += k.seconds;
    squares += k.seconds * k.seconds / k.launches;
  }
  double count = 0, z_sum = 0;
  for (const auto& [group, times] : syncs) {
    count += times;
    if (group > 1) z_sum += times * expected_normal_order_statistic(group, group);
  }
  if (sigma <= 0 || total <= 0 || count <= 0 || z_sum <= 0) return 0;
  return sigma * std::sqrt(squares / count) * z_sum / total;
}

} // namespace dtsim::plan
