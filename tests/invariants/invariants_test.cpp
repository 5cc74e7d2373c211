// Model invariants, over scenarios the seeded generator makes (scenario_generator.hpp): what physics and arithmetic
// promise whatever the model's constants. Each generated scenario is simulated as generated and changed one way at a
// time (faster_hardware_test.cpp holds the first invariant on every shipped scenario):
// - faster hardware never makes an iteration slower beyond 0.5% (event ordering may move a few sends): twice the NIC
//   bandwidth, the switches' uplinks twice as wide (half the oversubscription), twice the intra-node fabric (NVLink or
//   PCIe), a GPU twice as fast and as frugal (variants.hpp);
// - more GPU memory never turns "fits" into "does not fit";
// - weak scaling (twice the nodes, the same work per GPU) never has an efficiency above 1 beyond the same 0.5%;
// - twice the global batch on the same layout never lowers samples/s beyond 0.5%;
// - energy per iteration is never below the idle draw over the iteration's time;
// - cost scales exactly with price;
// - a sweep's points, run together in parallel or in separate sweeps (as shards run them), are byte-identical, and
//   the same scenario and seed give the same bytes.
// What software decides is held, not judged: NCCL's tuning picks each all-reduce's algorithm from the links' speeds
// (ncclTopoTuneModel), and where a faster or larger variant picked another one the two are compared again with each
// algorithm pinned (training.algorithm, as NCCL_ALGO pins it). Where an invariant does not hold by physics it is not
// asserted, and each such case is named where it is skipped.
// A broken invariant prints the scenario that broke it (its file's text), so it can be saved and run by hand.
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"
#include "sim/studies/sweep.hpp"
#include "tests/invariants/scenario_generator.hpp"
#include "tests/invariants/variants.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace dtsim {
namespace {

using invariants::GeneratedScenario;

// Scenarios generated and checked: seeds 1 .. scenarios(), one test each so that ctest spreads them over its jobs. 240
// take about a minute and a half on two cores; DTSIM_INVARIANT_SCENARIOS=N (the test binary run by hand) checks N.
std::uint64_t scenarios() {
  const char* given = std::getenv("DTSIM_INVARIANT_SCENARIOS");
  return given ? std::max<std::uint64_t>(1, std::strtoull(given, nullptr, 10)) : 240;
}
constexpr double kOrdering = 1.005; // event ordering's slack for "never slower"

std::optional<report::RunResult> run(const scenario::Scenario& s) {
  try {
    return simulate(s).result;
  } catch (const plan::PlanError&) {
    return std::nullopt; // does not fit (or cannot be built): the caller says which invariants still apply
  }
}

bool fits(const scenario::Scenario& s) {
  try {
    plan::make_plan(s);
    return true;
  } catch (const plan::PlanError&) {
    return false;
  }
}

std::string dump(const report::RunResult& r) {
  return report::to_json(r).dump();
}

class Invariants : public ::testing::TestWithParam<std::uint64_t> {
protected:
  void SetUp() override {
    generated_ = invariants::generate_scenario(GetParam());
    base_ = scenario::parse_scenario(generated_.json, "generated scenario " + std::to_string(GetParam()));
  }
  // Everything a failure needs to be reproduced: the scenario's one-line summary and its file's text.
  std::string scenario_text() const { return "\n" + generated_.summary + "\n" + generated_.json; }
  // `held` (a change of the base that may not slow it) against the base: `slower(base, held)` says by how much it
  // lost. Where NCCL's tuning picked other algorithms in the two, each algorithm either picked is pinned in both and
  // the comparison made again.
  using Runs = std::function<std::pair<double, std::vector<std::string>>(const scenario::Scenario&)>;
  void expect_held(const scenario::Scenario& base, const scenario::Scenario& changed, const Runs& measure,
                   const std::string& what) {
    const auto [base_loss, base_algorithms] = measure(base);
    const auto [loss, algorithms] = measure(changed);
    if (loss <= base_loss * kOrdering) return;
    ASSERT_NE(algorithms, base_algorithms) << what << ": " << loss << " against " << base_loss << scenario_text();
    auto either = base_algorithms;
    either.insert(either.end(), algorithms.begin(), algorithms.end());
    for (const auto& name : either) {
      const auto algorithm = collectives::parse_algorithm(name);
      ASSERT_TRUE(algorithm.has_value()) << name;
      auto pinned_base = base, pinned = changed;
      pinned_base.training.algorithm = pinned.training.algorithm = *algorithm;
      const double held = measure(pinned_base).first, pinned_loss = measure(pinned).first;
      EXPECT_LE(pinned_loss, held * kOrdering) << what << " with every all-reduce " << name << " (NCCL's tuning chose "
                                               << ::testing::PrintToString(algorithms) << " over "
                                               << ::testing::PrintToString(base_algorithms) << ")" << scenario_text();
    }
    ++software_decided;
  }
  // The iteration time of a scenario, and the algorithms its all-reduces ran.
  std::pair<double, std::vector<std::string>> iteration_of(const scenario::Scenario& s) const {
    const auto r = run(s);
    EXPECT_TRUE(r.has_value()) << "a faster or larger variant does not run" << scenario_text();
    if (!r) return {0, {}};
    return {r->iteration.mean, r->allreduce_algorithms};
  }
  void expect_not_slower(const scenario::Scenario& faster, const std::string& what) {
    expect_held(
        base_, faster, [this](const auto& s) { return iteration_of(s); }, what);
  }

  int software_decided = 0; // faster variants slower only by NCCL's choice of algorithm

  GeneratedScenario generated_;
  scenario::Scenario base_;
};

TEST_P(Invariants, HoldOnAGeneratedScenario) {
  const bool base_fits = fits(base_);
  auto larger = base_;
  larger.gpu.memory_bytes *= 2;
  if (base_fits) {
    EXPECT_TRUE(fits(larger)) << "twice the GPU memory does not fit" << scenario_text();
  }
  if (!base_fits) {
    RecordProperty("fits", "no: only the memory invariant applies");
    return;
  }

  const auto result = run(base_);
  ASSERT_TRUE(result.has_value()) << scenario_text();
  const double base = result->iteration.mean;
  ASSERT_GT(base, 0) << scenario_text();

  // The same scenario and seed, the same bytes.
  EXPECT_EQ(dump(*result), dump(*run(base_))) << "two runs differ" << scenario_text();

  // Faster hardware. Not for asynchronous strategies: their iteration is set by the order in which workers reach the
  // servers (a faster part can fall the workers into step, so that their pushes share the server's links and arrive
  // together, a convoy that leaves the server idle, then busy), which faster hardware may make worse.
  if (!result->strategy.asynchronous) {
    auto network = base_;
    network.cluster.nic.bandwidth *= 2;
    expect_not_slower(network, "twice the NIC bandwidth");
    if (!base_.cluster.tiers.empty() && base_.cluster.tiers.front().oversubscription > 1) {
      auto uplinks = base_;
      for (auto& tier : uplinks.cluster.tiers)
        tier.oversubscription = std::max(1.0, tier.oversubscription / 2);
      expect_not_slower(uplinks, "switch uplinks twice as wide");
    }
    if (base_.cluster.gpus_per_node > 1) {
      auto fabric = base_;
      fabric.cluster.intra.bandwidth *= 2;
      expect_not_slower(fabric, "twice the intra-node bandwidth");
    }
    expect_not_slower(invariants::with_faster_gpu(base_), "a GPU twice as fast");
  }

  // Twice the global batch on the same layout: twice the micro-batches of a model-parallel layout, twice each GPU's
  // batch otherwise. It may not fit; if it does, samples/s may not fall.
  auto doubled = base_;
  if (base_.parallelism.model_parallel())
    doubled.parallelism.micro_batches *= 2;
  else
    doubled.model.batch_per_gpu *= 2;
  if (fits(doubled)) {
    const auto r = run(doubled);
    ASSERT_TRUE(r.has_value()) << scenario_text();
    EXPECT_EQ(r->global_batch, 2 * result->global_batch) << scenario_text();
    EXPECT_GE(r->throughput, result->throughput / kOrdering) << "twice the global batch" << scenario_text();
  }

  // Energy: a node never draws less than its idle power over the iteration.
  if (result->energy.known) {
    const double idle_kwh = base_.cluster.nodes * result->energy.node_idle_watts * base / 3.6e6;
    EXPECT_GE(result->energy.kwh_per_iteration, idle_kwh * (1 - 1e-12)) << scenario_text();
    EXPECT_GE(result->energy.gpu_watts, base_.gpu.power.idle * (1 - 1e-12)) << scenario_text();
  }

  // Cost: three times the price, three times every dollar figure, and the same iteration.
  auto dearer = base_;
  dearer.cluster.price_per_node_hour *= 3;
  const auto priced = run(dearer);
  ASSERT_TRUE(priced.has_value()) << scenario_text();
  EXPECT_EQ(priced->iteration.mean, base) << scenario_text();
  EXPECT_DOUBLE_EQ(priced->price_per_hour, 3 * result->price_per_hour) << scenario_text();
  EXPECT_DOUBLE_EQ(priced->cost_per_epoch, 3 * result->cost_per_epoch) << scenario_text();
  EXPECT_DOUBLE_EQ(priced->cost_of_run, 3 * result->cost_of_run) << scenario_text();
  EXPECT_GT(result->cost_per_epoch, 0) << scenario_text();

  // Weak scaling and shards: the sweep over this node count and twice it, two points at once, against each point
  // swept alone (as two shards run them) and against the run above.
  const int nodes = base_.cluster.nodes;
  const auto whole = studies::sweep(base_, {nodes, 2 * nodes}, 2);
  const auto first = studies::sweep(base_, {nodes}, 1);
  const auto second = studies::sweep(base_, {2 * nodes}, 1);
  ASSERT_EQ(whole.size(), 2u);
  ASSERT_TRUE(whole[0].ok) << whole[0].error << scenario_text();
  EXPECT_EQ(dump(whole[0].result), dump(*result)) << "a sweep's point differs from the run" << scenario_text();
  EXPECT_EQ(dump(whole[0].result), dump(first.at(0).result)) << "shard of one point" << scenario_text();
  EXPECT_EQ(whole[1].ok, second.at(0).ok) << scenario_text();
  if (!whole[1].ok) return;
  EXPECT_EQ(dump(whole[1].result), dump(second.at(0).result)) << "shard of the other point" << scenario_text();
  // Weak scaling, where each GPU's share of the work and of the network stays the same: not where state is sharded
  // over the nodes (ZeRO's optimizer step, a server on every node: each GPU's share shrinks as the cluster grows),
  // not on a ring or torus (a dimension of two nodes has one link between them, of more nodes two per node, so each
  // node's network grows with the count), and not with random jitter (two iterations of other draws are other
  // samples).
  if (generated_.sharded_state || !base_.cluster.torus.empty() || base_.stragglers.jitter != strategies::Jitter::none)
    return;
  if (whole[1].efficiency > kOrdering) {
    // The larger cluster may have picked other algorithms (NCCL's tuning sees other node counts): held, as for faster
    // hardware, by sweeping again with each algorithm either count picked pinned.
    const double ideal = static_cast<double>(whole[1].result.gpus) / whole[0].result.gpus;
    ASSERT_NE(whole[0].result.allreduce_algorithms, whole[1].result.allreduce_algorithms)
        << "weak scaling efficiency " << whole[1].efficiency << " at " << 2 * nodes << " nodes, x" << ideal
        << " the GPUs" << scenario_text();
    auto algorithms = whole[0].result.allreduce_algorithms;
    algorithms.insert(algorithms.end(), whole[1].result.allreduce_algorithms.begin(),
                      whole[1].result.allreduce_algorithms.end());
    for (const auto& name : algorithms) {
      auto pinned = base_;
      pinned.training.algorithm = *collectives::parse_algorithm(name);
      const auto points = studies::sweep(pinned, {nodes, 2 * nodes}, 1);
      ASSERT_TRUE(points.at(0).ok && points.at(1).ok) << scenario_text();
      EXPECT_LE(points.at(1).efficiency, kOrdering) << "weak scaling with every all-reduce " << name << scenario_text();
    }
    ++software_decided;
  }
  if (software_decided > 0) RecordProperty("nccl_algorithm_changed", software_decided);
}

INSTANTIATE_TEST_SUITE_P(Generated, Invariants, ::testing::Range<std::uint64_t>(1, scenarios() + 1),
                         [](const auto& info) { return "seed_" + std::to_string(info.param); });

} // namespace
} // namespace dtsim
