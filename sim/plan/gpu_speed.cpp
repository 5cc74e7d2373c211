#include "sim/plan/gpu_speed.hpp"
#include "sim/plan/random.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace dtsim::plan {

double expected_normal_order_statistic(int k, int n) {
  const double p = (k - 0.375) / (n + 0.25);
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

std::vector<double> gpu_time_factors(int gpus, double sigma, std::uint64_t seed) {
  std::vector<double> factors(static_cast<std::size_t>(std::max(gpus, 0)), 1.0);
  if (sigma <= 0 || gpus < 2) return factors;
  // Which rank holds the k-th slowest GPU: a Fisher-Yates shuffle on the run's seed (its own stream, "GPUSPEED"),
  // with detail::uniform so that every standard library draws the same order.
  std::vector<int> order(factors.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed ^ 0x4750555350454544ULL);
  for (std::size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<std::size_t>(detail::uniform(rng) * static_cast<double>(i + 1))]);
  for (int k = 1; k <= gpus; ++k)
    factors[static_cast<std::size_t>(order[static_cast<std::size_t>(k - 1)])] =
        std::exp(sigma * expected_normal_order_statistic(k, gpus));
  return factors;
}

std::vector<std::vector<double>> compute_slowdown(const ParallelLayout& layout, const std::vector<double>& factors,
                                                  bool fold_tensor, bool fold_replicas) {
  if (std::all_of(factors.begin(), factors.end(), [](double f) { return f == 1; })) return {};
  std::vector<double> pace(factors.size(), 0.0); // by the rank that stands for the others
  const auto stand_in = [&](int rank) {
    auto c = layout.coord(rank);
    if (fold_tensor) c.tp = 0;
    if (fold_replicas) c.dp = 0;
    return layout.rank(c);
  };
  for (int r = 0; r < layout.world(); ++r) {
    double& p = pace[static_cast<std::size_t>(stand_in(r))];
    p = std::max(p, factors[static_cast<std::size_t>(r)]);
  }
  std::vector<std::vector<double>> rows(factors.size());
  for (int r = 0; r < layout.world(); ++r) // every rank at its stand-in's pace (a whole plan runs every replica)
    rows[static_cast<std::size_t>(r)] = {pace[static_cast<std::size_t>(stand_in(r))]};
  return rows;
}

} // namespace dtsim::plan
