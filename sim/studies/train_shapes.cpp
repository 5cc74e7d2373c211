// The other cluster shapes of a whole run (train_shapes.hpp).
#include "sim/studies/train_shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace dtsim::studies {
namespace {

// The scenario's document with fewer nodes. The survivors stay where they are in the network, but a topology built of
// equal groups (rail-optimized, a dragonfly's groups) needs a node count they divide: the groups are cut to the
// largest size that divides it, a coarser picture of the same fabric for the smaller shapes alone.
void set_nodes(nlohmann::json& doc, int nodes) {
  doc["cluster"]["nodes"] = nodes;
  auto& topology = doc["cluster"]["topology"];
  if (topology.is_object() && topology.contains("nodes_per_group") && topology["nodes_per_group"].is_number_integer())
    topology["nodes_per_group"] = std::gcd(nodes, topology["nodes_per_group"].get<int>());
}

// The scenario with `lost` data-parallel replicas gone, and the samples its iteration covers against the full one's.
// Keeping the global batch: each replica takes more (plain data parallelism: a larger micro-batch; pipelines: more
// micro-batches); scaling it: each replica's batch as before.
scenario::Scenario shrunk(const scenario::Scenario& s, int lost, double* samples_ratio) {
  auto doc = scenario::to_json(s);
  const bool keep = s.lifecycle.elastic.global_batch == lifecycle::GlobalBatch::keep;
  const int npr = nodes_per_replica(s);
  const int nodes_now = s.cluster.nodes - lost * npr;
  set_nodes(doc, nodes_now);
  double full = 0, now = 0;
  if (s.parallelism.model_parallel()) {
    const int data = s.parallelism.data, micro = s.parallelism.micro_batches;
    int micro_now = keep ? (micro * data + data - lost - 1) / (data - lost) : micro;
    // Megatron-LM's interleaved schedule runs micro-batches in multiples of the pipeline's stages: the nearest one
    // (rounding up could double the batch, and the activations held with it); the samples ratio counts the rest.
    const int step = s.parallelism.schedule == scenario::PipelineSchedule::interleaved ? s.parallelism.pipeline : 1;
    micro_now = std::max(step, (micro_now + step / 2) / step * step);
    doc["parallelism"]["data"] = data - lost;
    doc["parallelism"]["micro_batches"] = micro_now;
    doc["parallelism"].erase("global_batch");
    full = static_cast<double>(micro) * data, now = static_cast<double>(micro_now) * (data - lost);
  } else {
    const int nodes = s.cluster.nodes, batch = s.model.batch_per_gpu;
    const int batch_now = keep ? (batch * nodes + nodes - lost - 1) / (nodes - lost) : batch;
    doc["model"]["batch_per_gpu"] = batch_now;
    full = static_cast<double>(batch) * nodes, now = static_cast<double>(batch_now) * (nodes - lost);
  }
  *samples_ratio = now / full;
  try {
    return scenario::parse_scenario(doc.dump(), s.origin);
  } catch (const scenario::ScenarioError& e) {
    throw scenario::ScenarioError(e.file(), e.pointer(),
                                  fmt::format("{} (the cluster shrunk by {} data-parallel replica{} for "
                                              "\"elastic\": \"shrink\")",
                                              e.detail(), lost, lost == 1 ? "" : "s"));
  }
}

// After a failover the shadow's node runs two neighbouring stages: the pipeline of p - 1 stages whose heaviest
// adjacent pair of stages is merged (the iteration waits for the slowest stage), with the same micro-batches and
// data-parallel degree, and no redundancy left on the merged node (what it shadowed it now runs). Every pipeline is
// priced so; one degraded pipeline gates the others at the gradient all-reduce alike.
scenario::Scenario failover_shape(const scenario::Scenario& s, const std::vector<int>& chunk_units) {
  auto doc = scenario::to_json(s);
  const int p = s.parallelism.pipeline;
  std::size_t pair = 0;
  for (std::size_t k = 1; k + 1 < chunk_units.size(); ++k)
    if (chunk_units[k] + chunk_units[k + 1] > chunk_units[pair] + chunk_units[pair + 1]) pair = k;
  std::vector<int> merged;
  for (std::size_t k = 0; k < chunk_units.size(); ++k)
    if (k == pair + 1)
      merged.back() += chunk_units[k];
    else
      merged.push_back(chunk_units[k]);
  set_nodes(doc, s.cluster.nodes / p * (p - 1));
  auto& parallel = doc["parallelism"];
  parallel["pipeline"] = p - 1;
  parallel["stages"] = merged;
  parallel.erase("global_batch");
  const auto& spec = s.parallelism;
  if (p == 2) {
    parallel.erase("stages");
    if (spec.tensor == 1 && spec.context == 1 && spec.expert == 1) {
      // One stage left and nothing else to split: the micro-batches become plain gradient accumulation.
      doc["training"]["strategy"]["accumulation"] = spec.micro_batches;
      doc.erase("parallelism");
    }
  }
  doc["spot"]["policy"] = "wait";
  try {
    return scenario::parse_scenario(doc.dump(), s.origin);
  } catch (const scenario::ScenarioError& e) {
    throw scenario::ScenarioError(
        e.file(), "/spot/policy",
        fmt::format("after a failover stages {} and {} run on one node: {}", pair, pair + 1, e.detail()));
  }
}

} // namespace

int nodes_per_replica(const scenario::Scenario& s) {
  if (!s.parallelism.model_parallel()) return 1;
  const int gpus = s.world_size() / s.parallelism.data;
  return std::max(1, (gpus + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node);
}

std::vector<double> shrunk_iterations(const scenario::Scenario& s, double iteration, const MemoryLimit& limit) {
  const auto& e = s.lifecycle.elastic;
  if (!e.shrink) return {};
  const int replicas = s.cluster.nodes / nodes_per_replica(s);
  std::vector<double> out{iteration};
  for (int lost = 1; lost <= std::min(e.max_lost_replicas, replicas - 1); ++lost) {
    double ratio = 1;
    const auto smaller = shrunk(s, lost, &ratio);
    // Seconds per full step's worth of samples: a smaller global batch needs more iterations for the same data.
    out.push_back(simulate(smaller, false, false, limit).result.iteration.mean / ratio);
  }
  return out;
}

lifecycle::JobTimes::Redundancy redundancy_times(const scenario::Scenario& s, const report::RunResult& with,
                                                 const MemoryLimit& limit) {
  lifecycle::JobTimes::Redundancy r;
  r.enabled = true;
  r.stages = s.parallelism.pipeline;
  r.nodes_per_stage = s.cluster.nodes / r.stages;
  auto without = s;
  without.lifecycle.spot.policy = lifecycle::SpotPolicy::wait;
  r.without = simulate(without, false, false, limit).result.iteration.mean;
  // The merged node is priced by the shape without redundancy, the other stages' redundant forwards by the healthy
  // iteration: the slower of the two (a lower bound of the two together).
  try {
    r.failover =
        std::max(with.iteration.mean,
                 simulate(failover_shape(s, with.parallel.chunk_units), false, false, limit).result.iteration.mean);
  } catch (const plan::PlanError& e) {
    throw scenario::ScenarioError(s.origin, "/spot/policy",
                                  fmt::format("after a failover one node runs two stages: {}", e.what()));
  }
  // A replacement loads what its GPUs held (its stage's weights and optimizer states, and its successor's replica)
  // from the shadow's node over its NIC, and every rank rebuilds its communicators.
  double state = 0;
  for (const auto& item : with.memory.items)
    if (item.name == "weights" || item.name == "optimizer states" || item.name == "successor's replica")
      state += item.bytes;
  const auto& restart = s.lifecycle.restart;
  r.rejoin = restart.startup + restart.startup_per_gpu * s.world_size() +
             state * s.cluster.gpus_per_node / s.cluster.nic.bandwidth;
  return r;
}

} // namespace dtsim::studies
