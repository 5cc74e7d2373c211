#include "sim/lifecycle/lifecycle.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtsim::lifecycle {

double storage_seconds(double bytes_per_node, int nodes, double node_bandwidth, double aggregate_bandwidth,
                       double latency) {
  if (bytes_per_node <= 0) return 0;
  double seconds = bytes_per_node / node_bandwidth;
  if (aggregate_bandwidth > 0) seconds = std::max(seconds, bytes_per_node * nodes / aggregate_bandwidth);
  return seconds + latency;
}

double interruption_rate(const std::vector<FailureSource>& failures, const SpotSpec& spot, int nodes) {
  double rate = 0;
  for (const auto& f : failures)
    rate += f.units_per_node * nodes / f.mtbf; // superposed renewal processes: the long-run rate is N / MTBF
  if (spot.enabled) rate += spot.job_rate(nodes);
  return rate;
}

double rollback_rate(const std::vector<FailureSource>& failures, const SpotSpec& spot, int nodes, int stages) {
  if (!spot.enabled || spot.policy != SpotPolicy::redundancy || stages < 2)
    return interruption_rate(failures, spot, nodes);
  const double spot_rate = spot.job_rate(nodes);
  const double down = std::min(1.0, spot_rate / nodes * (spot.notice + spot.replacement));
  // A ring of two stages has one neighbour (before and after are the same node).
  const double share = stages == 2 ? down : 1 - (1 - down) * (1 - down);
  return interruption_rate(failures, spot, nodes) - spot_rate * (1 - share);
}

double young_interval(double checkpoint_cost, double mtbi) {
  if (!std::isfinite(mtbi)) return std::numeric_limits<double>::infinity();
  return std::sqrt(2 * checkpoint_cost * mtbi);
}

double first_order_waste(double checkpoint_cost, double interval, double mtbi, double restart) {
  return checkpoint_cost / interval + interval / (2 * mtbi) + restart / mtbi;
}

double checkpoint_cost(const JobTimes& job) {
  if (!job.async) return job.checkpoint_blocking;
  // While the write drains, iterations run at the slower rate: the drain's seconds cost the difference.
  const double slowdown = job.iteration > 0 ? job.iteration_draining / job.iteration - 1 : 0;
  return job.checkpoint_blocking + job.checkpoint_drain * slowdown / (1 + slowdown);
}

} // namespace dtsim::lifecycle
