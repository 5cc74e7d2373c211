#pragma once
// Where a strategy's participants run and the randomness it draws: which GPUs train (dedicated parameter servers take
// the cluster's last nodes), where each server shard lives and what its work costs, each worker's compute slowdown per
// iteration (stragglers) and gossip's peer per iteration. Every draw comes from the scenario's seed.
#include "sim/graph/execution_graph.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <vector>

namespace dtsim::plan {

struct StrategyLayout {
  int workers = 0;                   // ranks that train: GPUs 0 .. workers-1
  std::vector<int> server_endpoints; // per shard: the GPU whose host (and NIC) runs it
  // Per layer of the model: the shard holding its parameters whole (strategies::tensor_servers); all -1 where every
  // push is split over the shards.
  std::vector<int> layer_server;
};

StrategyLayout strategy_layout(const scenario::Scenario& s);

// Servers are CPU processes (DistBelief, ps-lite, BytePS): summing a pushed gradient streams three arrays through
// host memory, applying the optimizer streams the step's bytes (optimizer_step_bytes) per parameter.
std::vector<graph::Server> server_specs(const scenario::Scenario& s, const StrategyLayout& layout);

// Per worker, per iteration: the factor its compute takes longer by, its GPU's (`gpus`, one a worker: gpu_speed.hpp)
// times the stragglers' slowdown and jitter; one factor a worker when no straggler varies it, none when every factor
// is 1.
std::vector<std::vector<double>> compute_slowdown(const scenario::Scenario& s, const std::vector<double>& gpus,
                                                  int iterations);

// Per worker, per iteration: with probability p a peer drawn uniformly among the others, else -1.
std::vector<std::vector<int>> random_peers(int workers, int iterations, double probability, std::uint64_t seed);

// How fast the strategy's averaging mixes: 1 - |lambda_2| of its (expected) mixing matrix; -1 where it does not
// average models between workers (all-reduce and servers average exactly).
double spectral_gap(const scenario::Scenario& s, int workers);

// The share of an embedding table's rows a batch looks up, drawn uniformly: 1 - exp(-lookups / rows), counted in
// elements (lookups x dim over rows x dim). Real token frequencies are skewed, so fewer rows are touched: an upper
// bound on what sparse pushes send.
double touched_fraction(const models::Layer& layer, std::int64_t batch);

} // namespace dtsim::plan
