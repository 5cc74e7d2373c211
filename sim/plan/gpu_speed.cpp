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

std::vector<double> paced_by_stand_ins(const ParallelLayout& layout, const std::vector<double>& factors,
                                       bool fold_tensor, bool fold_replicas) {
  const auto stand_in = [&](int rank) {
    auto c = layout.coord(rank);
    if (fold_tensor) c.tp = 0;
    if (fold_replicas) c.dp = 0;
    return static_cast<std::size_t>(layout.rank(c));
  };
  std::vector<double> slowest(factors.size(), 0.0); // by the rank that stands for the others
  for (int r = 0; r < layout.world(); ++r)
    slowest[stand_in(r)] = std::max(slowest[stand_in(r)], factors[static_cast<std::size_t>(r)]);
  std::vector<double> paces(factors.size());
  for (int r = 0; r < layout.world(); ++r) // every rank at its stand-in's pace (a whole plan runs every replica)
    paces[static_cast<std::size_t>(r)] = slowest[stand_in(r)];
  return paces;
}

std::vector<std::vector<double>> constant_slowdown(const std::vector<double>& factors) {
  if (std::all_of(factors.begin(), factors.end(), [](double f) { return f == 1; })) return {};
  std::vector<std::vector<double>> rows;
  rows.reserve(factors.size());
  for (double f : factors)
    rows.push_back({f}); // a row of one: every iteration
  return rows;
}

} // namespace dtsim::plan
