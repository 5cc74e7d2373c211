// A whole run's inputs from a scenario, by hand: its length, the checkpoint's bytes and write time, the job's rate
// of interruptions from the Llama 3 study's counts, Young's interval, what an asynchronous drain leaves of the NICs.
#include "sim/studies/train.hpp"
#include "sim/studies/train_report.hpp"
#include "sim/studies/train_shapes.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

#include <gtest/gtest.h>

namespace dtsim::studies {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({
    "version": 1, "name": "t",
    "model": {"preset": "resnet50", "batch_per_gpu": 32},
    "dataset": {"samples": 1000000, "epochs": 3},
    "cluster": {"nodes": 16, "gpus_per_node": 8, "gpu": "a100-80gb", "nic": {"bandwidth": "800Gbps"}},
    "storage": {"tier": "pfs", "write_bandwidth": "4GB/s", "read_bandwidth": "8GB/s", "aggregate_write": "32GB/s",
                "latency": "2s"},
    "checkpoint": {"interval": "young"},
    "failures": {"preset": "meta-llama3-h100"}
  })");
}

scenario::Scenario read(const json& document) {
  return scenario::parse_scenario(document.dump(), "t.json");
}

// The JSON pointer a scenario is refused at, or "accepted".
std::string refused(const json& document) {
  try {
    read(document);
  } catch (const scenario::ScenarioError& e) {
    return e.pointer();
  }
  return "accepted";
}

TEST(TrainInputs, TheRunLastsItsEpochsInGlobalBatches) {
  const auto s = read(base());
  // 128 GPUs x 32 = 4,096 samples a step; 1,000,000 samples = 245 steps (the last one partial); 3 epochs.
  EXPECT_EQ(run_steps(s), 3 * 245);
  auto given = base();
  given["training"]["steps"] = 5000;
  EXPECT_EQ(run_steps(read(given)), 5000);
}

TEST(TrainInputs, ARunWithoutALengthIsRefusedNamingTrainingSteps) {
  auto document = base();
  document.erase("dataset");
  try {
    run_steps(read(document));
    FAIL() << "no length accepted";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_EQ(e.pointer(), "/training/steps");
  }
}

TEST(TrainInputs, TheCheckpointHoldsEveryParameterOnceAndItsWriteIsBoundByTheSharedTier) {
  const auto s = read(base());
  const auto size = checkpoint_size(s);
  // fp32 with momentum: 4 B of weights + 4 B of momentum per parameter (no fp32 master copy).
  const double params = static_cast<double>(s.model.workload.parameter_count());
  EXPECT_DOUBLE_EQ(size.total, params * 8);
  EXPECT_DOUBLE_EQ(size.per_node, size.total / 16);
  // 16 nodes at 4 GB/s each would write 64 GB/s; the tier takes 32 GB/s: the shared bound, plus 2 s.
  const auto job = job_times(s, 0.1, 0.1);
  EXPECT_NEAR(job.checkpoint_blocking, size.total / 32e9 + 2, 1e-12);
  // Reads: 8 GB/s a node, the tier's read limit defaults to its write limit (32 GB/s): 16 x 8 = 128 > 32.
  EXPECT_NEAR(job.checkpoint_load, size.total / 32e9 + 2, 1e-12);
}

TEST(TrainInputs, TheJobsInterruptionRateComesFromTheStudysCounts) {
  // At the study's own size (2,048 nodes of 8 GPUs) the job meets its 419 interruptions in 54 days.
  auto document = base();
  document["cluster"]["nodes"] = 2048;
  const auto s = read(document);
  const double rate = lifecycle::interruption_rate(s.lifecycle.failures, s.lifecycle.spot, 2048);
  EXPECT_NEAR(1 / rate, 54 * 86400.0 / 419, 1e-6);
  // At 16 nodes, 128 times fewer of every unit.
  EXPECT_NEAR(1 / lifecycle::interruption_rate(s.lifecycle.failures, s.lifecycle.spot, 16), 54 * 86400.0 / 419 * 128,
              1e-3);
}

TEST(TrainInputs, YoungsIntervalIsTheSquareRootOfTwiceTheCheckpointCostTimesTheMtbi) {
  auto document = base();
  document["training"]["steps"] = 1'000'000; // longer than the interval
  const auto s = read(document);
  bool young = false;
  const auto job = job_times(s, 0.1, 0.1, &young);
  EXPECT_TRUE(young);
  const double m = 54 * 86400.0 / 419 * 128;
  EXPECT_NEAR(job.checkpoint_interval, std::sqrt(2 * job.checkpoint_blocking * m), 1e-6);
  EXPECT_EQ(job.interval_steps, std::llround(job.checkpoint_interval / 0.1));
}

TEST(TrainInputs, WithoutInterruptionsYoungsIntervalIsUnboundedAndNoCheckpointIsWritten) {
  auto document = base();
  document.erase("failures");
  const auto job = job_times(read(document), 0.1, 0.1);
  EXPECT_FALSE(job.checkpoints);
  EXPECT_EQ(job.interval_steps, job.steps);
}

TEST(TrainInputs, AnAsynchronousDrainTakesItsShareOfEachNodesNics) {
  auto document = base();
  document["checkpoint"]["mode"] = "async";
  document["checkpoint"]["snapshot_bandwidth"] = "25GB/s";
  const auto s = read(document);
  double rate = 0;
  const auto draining = while_draining(s, &rate);
  // Each node drains at min(4 GB/s, 32 GB/s / 16 = 2 GB/s) = 2 GB/s of its 100 GB/s: 2% of the NIC is taken.
  EXPECT_DOUBLE_EQ(rate, 2e9);
  EXPECT_DOUBLE_EQ(draining.cluster.nic.bandwidth, 100e9 * 0.98);
  const auto size = checkpoint_size(s);
  const auto job = job_times(s, 0.1, 0.102);
  EXPECT_NEAR(job.checkpoint_blocking, size.per_gpu / 25e9, 1e-12); // the snapshot: each GPU's share over PCIe
  EXPECT_NEAR(job.checkpoint_drain, size.per_node / 2e9 + 2, 1e-12);
}

TEST(TrainInputs, TheWholeRunsSectionsReadBackFromTheCanonicalScenario) {
  auto document = base();
  document["spot"] = {{"interruptions_per_month", 0.1}, {"notice", "2min"}, {"replacement", "5min"}};
  document["restart"] = {{"reschedule", "10min"}, {"startup", "30s"}, {"warmup_iterations", 3}};
  document["failures"]["sources"] =
      json::array({{{"component", "psu"}, {"mtbf", "20y"}, {"distribution", "weibull"}, {"weibull_shape", 1.5}}});
  const auto canonical = scenario::to_json(read(document));
  EXPECT_EQ(scenario::to_json(scenario::parse_scenario(canonical.dump(), "t.json")), canonical);
  EXPECT_EQ(canonical.at("failures").at("sources").size(), 6u); // the preset's five and the one given
  EXPECT_DOUBLE_EQ(canonical.at("restart").at("reschedule").get<double>(), 600);
}

TEST(TrainInputs, SpotDefaultsToTheInstancesListedSpotPrice) {
  auto document = base();
  document["cluster"] = {{"instance", "gcp.a2-highgpu-8g"}, {"nodes", 2}};
  document["spot"] = {{"interruptions_per_month", 0.1}, {"notice", "30s"}, {"replacement", "5min"}};
  // Google Cloud's listed spot rate for a2-highgpu-8g, as topologies/instances/gcp.a2-highgpu-8g.json gives it.
  EXPECT_DOUBLE_EQ(read(document).lifecycle.spot.price_per_hour, 15.42416);
  document["spot"]["price_per_hour"] = 9.5; // a price of the scenario's own wins
  EXPECT_DOUBLE_EQ(read(document).lifecycle.spot.price_per_hour, 9.5);
}

TEST(TrainInputs, AShrunkShapeIsTheClusterWithoutTheLostReplicas) {
  auto document = base();
  document["cluster"]["nodes"] = 4;
  document["run"] = {{"iterations", 2}, {"warmup_iterations", 1}};
  document["elastic"] = {{"policy", "shrink"}, {"global_batch", "scale"}, {"max_lost_replicas", 8}};
  const auto s = read(document);
  const double full = simulate(s).result.iteration.mean;
  const auto shapes = shrunk_iterations(s, full);
  ASSERT_EQ(shapes.size(), 4u); // 0 to 3 nodes lost: a plain data-parallel replica is a node, one must be left
  EXPECT_DOUBLE_EQ(shapes[0], full);
  // Scaling the global batch: each GPU keeps its batch of 32, so 3 nodes train 3/4 of a full step's samples per
  // iteration and take 4/3 of their iterations for a full step's worth.
  auto three = base();
  three["cluster"]["nodes"] = 3;
  three["run"] = document["run"];
  EXPECT_NEAR(shapes[1], simulate(read(three)).result.iteration.mean * 4 / 3, 1e-12);
  // Keeping it: 32 x 4 / 3 = 42.7 images a GPU, rounded up to 43 (129 a node, 387 in all for 384).
  document["elastic"]["global_batch"] = "keep";
  three["model"]["batch_per_gpu"] = 43;
  EXPECT_NEAR(shrunk_iterations(read(document), full)[1],
              simulate(read(three)).result.iteration.mean * (32.0 * 4) / (43.0 * 3), 1e-12);
}

TEST(TrainInputs, ElasticAndCorrelatedFailureInputIsCheckedAtItsPointer) {
  auto document = base();
  document["elastic"] = {{"policy", "grow"}};
  EXPECT_EQ(refused(document), "/elastic/policy");
  document["elastic"] = {{"global_batch", "halve"}};
  EXPECT_EQ(refused(document), "/elastic/global_batch");
  document["elastic"] = {{"reconfigure", "-1min"}};
  EXPECT_EQ(refused(document), "/elastic/reconfigure");
  document = base();
  // A leaf switch of 32 nodes in a 16-node cluster.
  document["failures"]["sources"] = json::array({{{"component", "leaf"}, {"mtbf", "5y"}, {"nodes", 32}}});
  EXPECT_EQ(refused(document), "/failures");
  document["failures"]["sources"][0]["nodes"] = 0;
  EXPECT_EQ(refused(document), "/failures/sources/0/nodes");
  document["failures"]["sources"][0]["nodes"] = 8;
  EXPECT_EQ(read(document).lifecycle.failures.back().nodes, 8);
}

TEST(TrainInputs, ASpotTraceReadsSortedAndGivesItsOwnRate) {
  auto document = base();
  document["spot"] = {{"trace", {"2d", "12h", 3600}}, {"notice", "2min"}, {"replacement", "10min"}};
  const auto s = read(document);
  EXPECT_EQ(s.lifecycle.spot.trace, (std::vector<double>{3600, 43200, 172800}));
  // Three interruptions over the two days the trace spans: 3 / 172,800 s for the job, whatever its nodes.
  EXPECT_DOUBLE_EQ(s.lifecycle.spot.job_rate(16), 3 / 172800.0);
  EXPECT_EQ(read(scenario::to_json(s)).lifecycle.spot.trace, s.lifecycle.spot.trace);
  document["spot"]["trace"] = {"2d", "5GB"};
  try {
    read(document);
    FAIL() << "a size in a trace of times was accepted";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_EQ(e.pointer(), "/spot/trace/1");
  }
  document["spot"]["trace"] = {"2d"};
  document["spot"]["interruptions_per_month"] = 0.1;
  EXPECT_THROW(read(document), scenario::ScenarioError);
}

// GPT-2 small pipelined over single-V100 nodes on spot capacity, with Bamboo's redundant computation.
json pipelined(int stages, int nodes) {
  auto document = json::parse(R"({
    "version": 1, "name": "bamboo",
    "model": {"preset": "gpt2", "batch_per_gpu": 4, "precision": "amp"},
    "training": {"optimizer": "adam", "recompute": "full", "steps": 1000},
    "cluster": {"nodes": 4, "gpus_per_node": 1, "gpu": "v100", "nic": {"bandwidth": "10Gbps"}},
    "parallelism": {"pipeline": 4, "micro_batches": 4, "schedule": "1f1b"},
    "spot": {"interruptions_per_month": 2, "notice": "2min", "replacement": "10min", "policy": "redundancy"},
    "restart": {"startup": "1min", "startup_per_gpu": "1s"},
    "run": {"iterations": 2, "warmup_iterations": 1}
  })");
  document["parallelism"]["pipeline"] = stages;
  document["cluster"]["nodes"] = nodes;
  return document;
}

TEST(TrainInputs, RedundancyNeedsAPipelineOfWholeNodesAndIsCheckedAtThePolicy) {
  EXPECT_EQ(refused(pipelined(4, 8)), "accepted");
  EXPECT_EQ(read(scenario::to_json(read(pipelined(4, 8)))).lifecycle.spot.policy, lifecycle::SpotPolicy::redundancy);
  auto document = pipelined(4, 8);
  document["parallelism"]["order"] = "tp-ep-pp-dp"; // a node column would hold two stages' neighbours apart
  EXPECT_EQ(refused(document), "/spot/policy");
  document = pipelined(4, 4);
  document["parallelism"]["schedule"] = "interleaved";
  document["parallelism"]["virtual_stages"] = 2;
  EXPECT_EQ(refused(document), "/spot/policy");
  document = pipelined(4, 4);
  document["elastic"] = {{"policy", "shrink"}};
  EXPECT_EQ(refused(document), "/spot/policy");
  document = pipelined(1, 4);
  document["parallelism"].erase("micro_batches");
  EXPECT_EQ(refused(document), "/spot/policy");
}

TEST(TrainInputs, RedundancysShapesAndTheRejoinByHand) {
  const auto s = read(pipelined(4, 4));
  const auto with = simulate(s).result;
  const auto r = redundancy_times(s, with);
  EXPECT_EQ(r.stages, 4);
  EXPECT_EQ(r.nodes_per_stage, 1);
  auto plain = pipelined(4, 4);
  plain["spot"]["policy"] = "wait";
  EXPECT_DOUBLE_EQ(r.without, simulate(read(plain)).result.iteration.mean);
  EXPECT_GT(with.iteration.mean, r.without); // the redundant forwards and the replica's upkeep cost time
  EXPECT_GE(r.failover, with.iteration.mean);
  // The replacement loads its GPU's weights, optimizer states and successor's replica over the 10 Gbps NIC, after a
  // minute of start-up and a second for each of the 4 GPUs.
  double state = 0;
  for (const auto& item : with.memory.items)
    if (item.name == "weights" || item.name == "optimizer states" || item.name == "successor's replica")
      state += item.bytes;
  EXPECT_NEAR(r.rejoin, 60 + 4 * 1 + state / 1.25e9, 1e-9);
  // Two stages: after a failover one node holds the whole model and the micro-batches become accumulation steps.
  const auto two = read(pipelined(2, 2));
  const auto with_two = simulate(two).result;
  EXPECT_GE(redundancy_times(two, with_two).failover, with_two.iteration.mean);
}

TEST(TrialStats, NearestRankPercentiles) {
  std::vector<double> values;
  for (int i = 1; i <= 100; ++i)
    values.push_back(101 - i);
  const auto s = trial_stats(values);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p90, 90);
  EXPECT_DOUBLE_EQ(s.p99, 99);
}

} // namespace
} // namespace dtsim::studies
