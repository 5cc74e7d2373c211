#include "sim/plan/moe_routing.hpp"
#include "sim/plan/random.hpp"

#include <algorithm>
#include <numeric>

namespace dtsim::plan {

std::vector<double> expert_shares(const scenario::RoutingSpec& routing, int experts, std::uint64_t seed, int layer) {
  std::vector<double> shares(experts, 1.0);
  std::mt19937_64 rng(seed ^ 0x524f55544552ULL ^ (static_cast<std::uint64_t>(layer) << 40)); // "ROUTER", per layer
  switch (routing.distribution) {
  case scenario::RoutingDistribution::uniform:
    break;
  case scenario::RoutingDistribution::zipf: {
    // The i-th most popular expert gets 1 / i^a; which expert is i-th is a seeded permutation (Fisher-Yates).
    std::vector<int> rank(experts);
    std::iota(rank.begin(), rank.end(), 1);
    for (int i = experts - 1; i > 0; --i)
      std::swap(rank[i], rank[static_cast<int>(detail::uniform(rng) * (i + 1))]);
    for (int e = 0; e < experts; ++e)
      shares[e] = 1.0 / std::pow(static_cast<double>(rank[e]), routing.parameter);
    break;
  }
  case scenario::RoutingDistribution::dirichlet:
    for (auto& s : shares)
      s = detail::gamma_draw(routing.parameter, rng);
    break;
  }
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  for (auto& s : shares)
    s /= total;
  return shares;
}

ExpertRouting route_tokens(const std::vector<double>& shares, double tokens_per_rank, int top_k, int ep,
                           double capacity_factor) {
  ExpertRouting r;
  const int experts = static_cast<int>(shares.size());
  const int local = experts / ep;
  r.assignments = top_k * tokens_per_rank * ep;
  const double capacity = capacity_factor > 0 ? capacity_factor * r.assignments / experts : r.assignments;
  r.kept.resize(experts);
  r.rank_tokens.assign(ep, 0.0);
  r.matrix.assign(static_cast<std::size_t>(ep) * ep, 0.0);
  for (int e = 0; e < experts; ++e) {
    const double load = r.assignments * shares[e];
    r.kept[e] = std::min(load, capacity);
    r.dropped += load - r.kept[e];
    r.rank_tokens[e / local] += r.kept[e];
    // Every position sends the expert its share of the kept tokens.
    for (int i = 0; i < ep; ++i)
      r.matrix[static_cast<std::size_t>(i) * ep + e / local] += r.kept[e] / ep;
  }
  return r;
}

} // namespace dtsim::plan
