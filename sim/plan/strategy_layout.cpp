#include "sim/plan/strategy_layout.hpp"
#include "sim/plan/gpu_speed.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/plan/random.hpp"
#include "sim/strategies/mixing.hpp"
#include "sim/strategies/placement.hpp"

#include <cmath>
#include <numbers>
#include <random>

namespace dtsim::plan {

using strategies::Kind;

StrategyLayout strategy_layout(const scenario::Scenario& s) {
  const auto& c = s.cluster;
  const auto& strategy = s.training.strategy;
  StrategyLayout layout;
  layout.workers = strategies::worker_count(strategy, c.nodes, c.gpus_per_node);
  if (!strategies::uses_servers(strategy)) return layout;
  // Dedicated servers run on the first GPU's host of each of the cluster's last nodes; co-located ones on the first
  // `count` nodes (one per node when 0), beside the workers.
  const int dedicated = strategies::dedicated_server_nodes(strategy);
  const int first_node = c.nodes - dedicated;
  const int count = dedicated > 0 ? dedicated : strategy.servers.count > 0 ? strategy.servers.count : c.nodes;
  for (int j = 0; j < count; ++j)
    layout.server_endpoints.push_back(((dedicated > 0 ? first_node + j : j) % c.nodes) * c.gpus_per_node);
  std::vector<std::int64_t> parameters;
  for (const auto& layer : s.model.workload.layers)
    parameters.push_back(layer.parameters);
  layout.layer_server = strategies::tensor_servers(strategy.servers.tensors, parameters, count);
  return layout;
}

std::vector<graph::Server> server_specs(const scenario::Scenario& s, const StrategyLayout& layout) {
  const auto& strategy = s.training.strategy;
  graph::Server spec;
  using strategies::Schedule;
  spec.schedule = strategy.schedule == Schedule::synchronous    ? graph::ServerSchedule::synchronous
                  : strategy.schedule == Schedule::asynchronous ? graph::ServerSchedule::asynchronous
                                                                : graph::ServerSchedule::bounded;
  spec.staleness = strategy.staleness;
  spec.backup = strategy.backup_workers;
  const double host = s.training.host_memory_bandwidth;
  const double weight = calibration::gradient_bytes(s.model.precision);
  spec.aggregate_seconds_per_byte = 3.0 / host;
  spec.channel_rate = strategy.servers.channel_bandwidth;
  spec.update_seconds_per_byte =
      strategy.servers.sums_only ? 0 : optimizer_step_bytes(s.training.optimizer, s.model.precision) / weight / host;
  std::vector<graph::Server> specs;
  for (int endpoint : layout.server_endpoints) {
    spec.endpoint = endpoint;
    specs.push_back(spec);
  }
  return specs;
}

namespace {

using detail::standard_normal;
using detail::uniform;

double jitter_factor(strategies::Jitter jitter, double scale, std::mt19937_64& rng) {
  switch (jitter) {
  case strategies::Jitter::lognormal:
    return std::exp(scale * standard_normal(rng));
  case strategies::Jitter::uniform:
    return 1 + scale * uniform(rng);
  case strategies::Jitter::exponential:
    return 1 - scale * std::log(1.0 - uniform(rng));
  case strategies::Jitter::none:
    break;
  }
  return 1;
}

} // namespace

std::vector<std::vector<double>> compute_slowdown(const scenario::Scenario& s, const std::vector<double>& gpus,
                                                  int iterations) {
  const auto& stragglers = s.stragglers;
  if (!stragglers.any()) return constant_slowdown(gpus);
  const int workers = static_cast<int>(gpus.size());
  std::vector<std::vector<double>> factors(workers);
  for (int r = 0; r < workers; ++r)
    factors[r].assign(iterations, gpus[r]);
  for (int r : stragglers.ranks)
    if (r < workers)
      for (double& f : factors[r])
        f *= stragglers.slowdown;
  if (stragglers.jitter != strategies::Jitter::none) {
    std::mt19937_64 rng(s.run.seed ^ 0x5354524147474c45ULL); // "STRAGGLE": a stream of its own
    for (int it = 0; it < iterations; ++it)
      for (int r = 0; r < workers; ++r)
        factors[r][it] *= jitter_factor(stragglers.jitter, stragglers.scale, rng);
  }
  return factors;
}

std::vector<std::vector<int>> random_peers(int workers, int iterations, double probability, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x474f535349505321ULL); // "GOSSIP!"
  std::vector<std::vector<int>> peers(workers, std::vector<int>(iterations, -1));
  for (int it = 0; it < iterations; ++it)
    for (int r = 0; r < workers; ++r) {
      const bool push = uniform(rng) < probability;
      const int other = static_cast<int>(uniform(rng) * (workers - 1));
      if (push && workers > 1) peers[r][it] = other >= r ? other + 1 : other;
    }
  return peers;
}

double spectral_gap(const scenario::Scenario& s, int workers) {
  const auto& strategy = s.training.strategy;
  switch (strategy.kind) {
  case Kind::dpsgd:
    return strategies::spectral_gap(strategies::mixing_matrix(strategy.graph, workers), workers);
  case Kind::gossip:
    return strategies::spectral_gap(strategies::expected_gossip_matrix(workers, strategy.probability), workers);
  case Kind::adpsgd:
    return strategies::spectral_gap(strategies::expected_gossip_matrix(workers, 1.0), workers);
  default:
    return -1;
  }
}

double touched_fraction(const models::Layer& layer, std::int64_t batch) {
  if (layer.parameters <= 0) return 0;
  return 1 - std::exp(-static_cast<double>(batch) * static_cast<double>(layer.output_elements) /
                      static_cast<double>(layer.parameters));
}

} // namespace dtsim::plan
