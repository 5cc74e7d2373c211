#pragma once
// An nccl-tests-style benchmark of one collective over a scenario's cluster: for each buffer size, the
// simulated time, algorithm bandwidth (size / time) and bus bandwidth (algbw times nccl-tests' factor,
// which makes it comparable with the link bandwidth whatever the rank count).
#include "sim/collectives/schedule.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/scenario/scenario.hpp"

#include <functional>
#include <string>
#include <vector>

namespace dtsim::studies {

struct CollectiveBench {
  collectives::Operation op = collectives::Operation::all_reduce;
  collectives::Algorithm algorithm = collectives::Algorithm::automatic;
  collectives::Protocol protocol = collectives::Protocol::automatic;
  int ranks = 0; // 0: every GPU of the scenario's cluster; more than it has: nodes are added
  std::vector<double> sizes;
  bool aggregate = false; // fidelity mode
};

struct CollectivePoint {
  double bytes = 0;
  collectives::Algorithm algorithm = collectives::Algorithm::ring; // the one that ran (auto resolved)
  collectives::Protocol protocol = collectives::Protocol::simple;  // NCCL's, resolved (Simple without NCCL)
  int channels = 0;                                                // NCCL's channels at this size (0: no NCCL)
  bool ok = false;
  std::string error;
  double seconds = 0;
  double algbw = 0; // bytes/s
  double busbw = 0; // bytes/s
};

// A scenario of `nodes` nodes of a cloud instance preset and nothing else that matters to a benchmark (the format
// requires a model: a small one, unused), with `--set`-style overrides; errors name `origin`.
scenario::Scenario instance_scenario(const std::string& instance, int nodes,
                                     const std::vector<scenario::Override>& overrides, const std::string& origin);

// The cluster a benchmark of `ranks` runs on: the scenario's, with nodes added or removed to fit.
topologies::ClusterSpec bench_cluster(const scenario::Scenario& scenario, int ranks);

std::vector<CollectivePoint> bench_collective(const scenario::Scenario& scenario, const CollectiveBench& bench,
                                              int jobs, const std::function<void(std::size_t, std::size_t)>& progress,
                                              const engine::ChildLimits& limit = {});

// "8B..8GiB" (doubling, as nccl-tests -f 2) or "1MiB,64MiB,1GiB". Throws std::invalid_argument.
std::vector<double> parse_sizes(const std::string& text);

// nccl-tests' -b MIN -e MAX -f FACTOR: MIN, MIN x FACTOR, ... up to MAX (src/common.cu: `size *= stepfactor` while
// size <= maxBytes). Sizes as nccl-tests writes them (8, 128K, 1M, 8G: K, M and G are binary) or with dtsim's units
// (1MiB). Throws scenario::ScenarioError naming the option at fault (-b, -e or -f) and what it expected.
std::vector<double> nccl_tests_sizes(const std::string& min, const std::string& max, const std::string& factor);

} // namespace dtsim::studies
