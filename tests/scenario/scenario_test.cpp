#include "scenario_test_util.hpp"

#include "calibration/profile.hpp"
#include "sim/scenario/scenario.hpp"

#include <filesystem>
#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

using test::json;
using test::minimal;
using test::parse;
using test::patched;

TEST(Scenario, MinimalScenarioTakesTheDocumentedDefaults) {
  const Scenario s = parse(minimal());
  const auto v100 = calibration::find_profile("v100");
  ASSERT_TRUE(v100);

  EXPECT_EQ(s.name, "ok"); // the file stem of "scenarios/ok.json"
  EXPECT_EQ(s.origin, "scenarios/ok.json");
  EXPECT_EQ(s.description, "");

  EXPECT_EQ(s.model.preset, "mlp-small");
  EXPECT_FALSE(s.model.workload.layers.empty());
  EXPECT_EQ(s.model.batch_per_gpu, 32);
  EXPECT_EQ(s.model.precision, calibration::Precision::fp32);
  EXPECT_EQ(s.dataset.samples, 0);

  EXPECT_EQ(s.cluster.nodes, 2);
  EXPECT_EQ(s.cluster.gpus_per_node, 1);
  EXPECT_EQ(s.cluster.gpu, "v100");
  EXPECT_EQ(s.gpu.name, "v100");
  // The V100 has NVLink: the intra-node fabric defaults to it, at the profile's bandwidth and 0.3 us a link (NCCL's
  // LL step over NVLink, 0.6 us in tuning.cc, crosses two: GPU to NVSwitch to GPU); PCIe 0.5 us a link (1 us a step).
  ASSERT_GT(v100->nvlink_bandwidth, 0);
  EXPECT_EQ(s.cluster.intra_kind, topologies::IntraNodeKind::nvlink);
  EXPECT_DOUBLE_EQ(s.cluster.intra.bandwidth, v100->nvlink_bandwidth);
  EXPECT_DOUBLE_EQ(s.cluster.intra.latency, 0.3e-6);
  EXPECT_DOUBLE_EQ(s.cluster.pcie.bandwidth, v100->pcie_bandwidth);
  EXPECT_DOUBLE_EQ(s.cluster.pcie.latency, 0.5e-6);
  // What the links carry as data: NCCL's count of an NVLink2 link (20 of 25 GB/s) and of PCIe Gen3 (12 of 15.75).
  EXPECT_DOUBLE_EQ(s.cluster.fabric_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(s.cluster.pcie_efficiency, 0.762);
  EXPECT_EQ(s.cluster.compute_capability, 70);
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 1.25e9);
  // An RDMA NIC link: NCCL's fastest network step (2.7 us, tuning.cc: NET, Ring LL) less two PCIe crossings
  // (0.5 us each) and a switch (1 us), over the path's two NIC links.
  EXPECT_DOUBLE_EQ(s.cluster.nic.latency, 0.35e-6); // (2.7 - 2 x 0.5 - 1) / 2 us
  EXPECT_DOUBLE_EQ(s.cluster.switch_latency, 1e-6);

  EXPECT_EQ(s.training.strategy, strategies::StrategySpec{}); // all-reduce
  EXPECT_EQ(s.training.compression, strategies::CompressionSpec{});
  EXPECT_FALSE(s.stragglers.any());
  EXPECT_EQ(s.training.algorithm, collectives::Algorithm::automatic);
  // "auto": a data-parallel all-reduce of one-GPU nodes on one switch replays its collectives aggregated.
  EXPECT_TRUE(s.run.fidelity_auto);
  EXPECT_EQ(s.run.fidelity, Fidelity::aggregate);
  EXPECT_DOUBLE_EQ(s.training.bucket_bytes, 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.training.first_bucket_bytes, 1.0 * 1024 * 1024);
  EXPECT_TRUE(s.training.overlap);
  EXPECT_EQ(s.training.optimizer, Optimizer::momentum);

  EXPECT_EQ(s.run.iterations, 10);
  EXPECT_EQ(s.run.warmup_iterations, 1);
  EXPECT_EQ(s.run.seed, 1u);

  EXPECT_EQ(s.network.model, NetworkModel::cm02);
  EXPECT_FALSE(s.network.cross_traffic); // cm02 by default: no TCP ACK traffic

  EXPECT_EQ(s.world_size(), 2);
  EXPECT_EQ(s.global_batch(), 64);
}

TEST(Scenario, EveryFieldCanBeSet) {
  const Scenario s = parse(patched(json::parse(R"({
    "name": "full", "description": "notes",
    "model": {"precision": "amp", "batch_per_gpu": 16},
    "dataset": {"samples": 1000},
    "cluster": {"nodes": 3, "gpus_per_node": 8, "gpu": "a100-80gb",
                "intra_node": {"fabric": "pcie", "bandwidth": "32GB/s", "latency": "3us"},
                "pcie": {"bandwidth": 16000000000, "latency": "500ns"},
                "nic": {"bandwidth": "100Gbps", "latency": 0.00001},
                "switch": {"latency": "0.5us"}},
    "training": {"strategy": "allreduce", "algorithm": "ring", "bucket_size": "50MB", "first_bucket_size": 4096,
                 "overlap": false, "optimizer": "adam"},
    "run": {"iterations": 3, "warmup_iterations": 0, "seed": 18446744073709551615},
    "network": {"model": "cm02", "cross_traffic": false}
  })")));
  EXPECT_EQ(s.name, "full");
  EXPECT_EQ(s.description, "notes");
  EXPECT_EQ(s.model.precision, calibration::Precision::amp);
  EXPECT_EQ(s.model.batch_per_gpu, 16);
  EXPECT_EQ(s.dataset.samples, 1000);
  EXPECT_EQ(s.cluster.gpu_count(), 24);
  EXPECT_EQ(s.gpu.name, "a100-80gb");
  EXPECT_EQ(s.cluster.intra_kind, topologies::IntraNodeKind::pcie);
  EXPECT_DOUBLE_EQ(s.cluster.intra.bandwidth, 32e9);
  EXPECT_DOUBLE_EQ(s.cluster.intra.latency, 3e-6);
  EXPECT_DOUBLE_EQ(s.cluster.pcie.bandwidth, 16e9);
  EXPECT_DOUBLE_EQ(s.cluster.pcie.latency, 500e-9);
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(s.cluster.nic.latency, 10e-6);
  EXPECT_DOUBLE_EQ(s.cluster.switch_latency, 0.5e-6);
  EXPECT_DOUBLE_EQ(s.training.bucket_bytes, 50e6);
  EXPECT_DOUBLE_EQ(s.training.first_bucket_bytes, 4096);
  EXPECT_FALSE(s.training.overlap);
  EXPECT_EQ(s.training.optimizer, Optimizer::adam);
  EXPECT_EQ(s.run.iterations, 3);
  EXPECT_EQ(s.run.warmup_iterations, 0);
  EXPECT_EQ(s.run.seed, 18446744073709551615u);
  EXPECT_EQ(s.network.model, NetworkModel::cm02);
  EXPECT_FALSE(s.network.cross_traffic);
}

TEST(Scenario, PcieFabricDefaultsToTheProfilesPcieBandwidthAndHalfAMicrosecond) {
  const Scenario s = parse(patched({{"cluster", {{"intra_node", {{"fabric", "pcie"}}}}}}));
  EXPECT_EQ(s.cluster.intra_kind, topologies::IntraNodeKind::pcie);
  EXPECT_DOUBLE_EQ(s.cluster.intra.bandwidth, s.gpu.pcie_bandwidth);
  EXPECT_DOUBLE_EQ(s.cluster.intra.latency, 0.5e-6);
  EXPECT_DOUBLE_EQ(s.cluster.fabric_efficiency, s.gpu.pcie_efficiency);
}

TEST(Scenario, InlineLayersWithDefaultBackwardFlops) {
  const Scenario s = parse(patched(json::parse(R"({"name": "tiny", "model": {"preset": null, "layers": [
      {"name": "fc1", "kind": "matmul", "forward_flops": 1.6e6, "parameters": 803840,
       "input_elements": 784, "output_elements": 1024},
      {"name": "relu1", "kind": "elementwise", "forward_flops": 1024, "parameters": 0,
       "input_elements": 1024, "output_elements": 1024},
      {"name": "fc2", "kind": "matmul", "forward_flops": 20480, "backward_flops": 1000, "parameters": 10250,
       "input_elements": 1024, "output_elements": 10}]}})")));
  EXPECT_EQ(s.model.preset, "");
  EXPECT_EQ(s.model.workload.name, "tiny");
  ASSERT_EQ(s.model.workload.layers.size(), 3u);
  const auto& fc1 = s.model.workload.layers[0];
  EXPECT_EQ(fc1.name, "fc1");
  EXPECT_EQ(fc1.kind, models::LayerKind::matmul);
  EXPECT_DOUBLE_EQ(fc1.forward_flops, 1.6e6);
  EXPECT_DOUBLE_EQ(fc1.backward_flops, 3.2e6); // 2x forward for a matmul
  EXPECT_EQ(fc1.parameters, 803840);
  EXPECT_EQ(fc1.input_elements, 784);
  EXPECT_EQ(fc1.output_elements, 1024);
  EXPECT_DOUBLE_EQ(s.model.workload.layers[1].backward_flops, 1024); // 1x for the others
  EXPECT_DOUBLE_EQ(s.model.workload.layers[2].backward_flops, 1000); // as given
}

TEST(Scenario, CanonicalJsonSpellsOutDefaultsAndParsesBackToTheSameScenario) {
  const Scenario s = parse(minimal());
  const json canonical = to_json(s);
  EXPECT_EQ(canonical["version"], 1);
  EXPECT_EQ(canonical["name"], "ok");
  EXPECT_EQ(canonical["model"]["preset"], "mlp-small");
  EXPECT_EQ(canonical["model"]["precision"], "fp32");
  EXPECT_EQ(canonical["cluster"]["gpu"], "v100");
  EXPECT_EQ(canonical["cluster"]["gpus_per_node"], 1);
  EXPECT_EQ(canonical["cluster"]["intra_node"]["fabric"], "nvlink");
  EXPECT_DOUBLE_EQ(canonical["cluster"]["nic"]["bandwidth"].get<double>(), 1.25e9);
  EXPECT_DOUBLE_EQ(canonical["cluster"]["nic"]["latency"].get<double>(), 0.35e-6);
  EXPECT_DOUBLE_EQ(canonical["training"]["bucket_size"].get<double>(), 25.0 * 1024 * 1024);
  EXPECT_EQ(canonical["training"]["optimizer"], "momentum");
  EXPECT_EQ(canonical["run"]["seed"], 1);
  EXPECT_EQ(canonical["network"]["model"], "cm02");
  EXPECT_EQ(canonical["training"]["strategy"]["name"], "allreduce");
  EXPECT_EQ(canonical["training"]["strategy"]["kind"], "allreduce");
  EXPECT_FALSE(canonical["training"]["strategy"].contains("algorithm")); // not set: training.algorithm decides
  EXPECT_EQ(canonical["training"]["compression"]["kind"], "none");
  EXPECT_FALSE(canonical.contains("dataset"));    // no samples per epoch given
  EXPECT_FALSE(canonical.contains("stragglers")); // nobody is slowed

  const Scenario again = parse_scenario(canonical.dump(), "elsewhere.json");
  EXPECT_EQ(to_json(again), canonical);
  EXPECT_EQ(canonical.dump(), to_json(parse(minimal())).dump()); // deterministic
}

TEST(Scenario, CanonicalJsonOfInlineLayersRoundTrips) {
  const Scenario s = parse(patched(json::parse(R"({"dataset": {"samples": 7}, "model": {"preset": null, "layers": [
      {"name": "fc", "kind": "matmul", "forward_flops": 100, "parameters": 10, "input_elements": 5,
       "output_elements": 2}]}})")));
  const json canonical = to_json(s);
  EXPECT_FALSE(canonical["model"].contains("preset"));
  EXPECT_EQ(canonical["model"]["layers"][0]["backward_flops"], 200.0);
  EXPECT_EQ(canonical["dataset"]["samples"], 7);
  EXPECT_EQ(to_json(parse_scenario(canonical.dump(), "x.json")), canonical);
}

TEST(Scenario, CanonicalJsonOfATransformerSpecRoundTrips) {
  const Scenario s =
      parse(patched({{"model", {{"preset", nullptr}, {"transformer", {{"base", "bert-large"}, {"sequence", 128}}}}}}));
  const json canonical = to_json(s);
  const json& t = canonical["model"]["transformer"];
  EXPECT_FALSE(canonical["model"].contains("preset"));
  EXPECT_FALSE(t.contains("base")); // every field written out instead
  EXPECT_EQ(t["name"], "bert-large");
  EXPECT_EQ(t["sequence"], 128);
  EXPECT_EQ(t["max_positions"], 512);
  EXPECT_EQ(t["positions"], "learned");
  EXPECT_EQ(t["post_norm"], true);
  const Scenario again = parse_scenario(canonical.dump(), "x.json");
  EXPECT_EQ(to_json(again), canonical);
  EXPECT_EQ(again.model.workload.parameter_count(), s.model.workload.parameter_count());
  EXPECT_EQ(again.model.workload.forward_flops_per_sample(), s.model.workload.forward_flops_per_sample());
}

TEST(Scenario, EnumNames) {
  EXPECT_EQ(to_string(Fidelity::aggregate), "aggregate");
  EXPECT_EQ(to_string(Optimizer::sgd), "sgd");
  EXPECT_EQ(to_string(Optimizer::momentum), "momentum");
  EXPECT_EQ(to_string(Optimizer::adam), "adam");
  EXPECT_EQ(to_string(NetworkModel::lv08), "lv08");
  EXPECT_EQ(to_string(NetworkModel::cm02), "cm02");
}

TEST(Scenario, LoadReportsAnUnreadableFile) {
  try {
    load_scenario("/nonexistent/dir/x.json");
    FAIL() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/dir/x.json");
    EXPECT_EQ(e.pointer(), "");
    EXPECT_TRUE(test::contains(e.what(), "cannot read the file: No such file or directory")) << e.what();
  }
}

const std::string kScenarios = std::string(DTSIM_SOURCE_DIR) + "/scenarios";

TEST(ShippedScenarios, Quickstart) {
  const Scenario s = load_scenario(kScenarios + "/quickstart.json");
  EXPECT_EQ(s.name, "quickstart");
  EXPECT_EQ(s.model.preset, "mlp-small");
  EXPECT_EQ(s.model.batch_per_gpu, 64);
  EXPECT_EQ(s.model.precision, calibration::Precision::fp32);
  EXPECT_EQ(s.cluster.nodes, 4);
  EXPECT_EQ(s.cluster.gpus_per_node, 1);
  EXPECT_EQ(s.cluster.gpu, "v100");
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(s.cluster.nic.latency, 5e-6);
  EXPECT_EQ(s.dataset.samples, 60000);
  EXPECT_EQ(s.run.iterations, 5);
  EXPECT_EQ(s.run.warmup_iterations, 1);
  // TCP over Ethernet: plain max-min sharing with TCP's framing and one stream a connection (no lv08 factors).
  EXPECT_EQ(s.network.model, NetworkModel::cm02);
  EXPECT_TRUE(s.cluster.tcp.enabled);
  EXPECT_EQ(s.cluster.tcp.streams, 1);
  EXPECT_DOUBLE_EQ(s.cluster.tcp.payload_efficiency(), 1448.0 / 1538);
}

TEST(ShippedScenarios, ResNet50OnP3_2xlarge) {
  const Scenario s = load_scenario(kScenarios + "/resnet50-p3.2xlarge-sync.json");
  EXPECT_EQ(s.name, "resnet50-p3.2xlarge-sync");
  EXPECT_FALSE(s.description.empty());
  EXPECT_EQ(s.model.preset, "resnet50");
  EXPECT_EQ(s.model.batch_per_gpu, 64);
  EXPECT_EQ(s.model.precision, calibration::Precision::fp32);
  EXPECT_EQ(s.dataset.samples, 1281167);
  EXPECT_EQ(s.cluster.nodes, 8);
  EXPECT_EQ(s.cluster.gpus_per_node, 1);
  EXPECT_EQ(s.cluster.gpu, "v100");
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(s.cluster.nic.latency, 25e-6);
  EXPECT_EQ(s.run.iterations, 10);
  EXPECT_EQ(s.run.warmup_iterations, 2);
}

TEST(ShippedScenarios, EveryShippedScenarioParses) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kScenarios)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_scenario(entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 2);
}

// A TCP instance brings its transport (topologies/instances/aws.p3.2xlarge.json: NCCL's 16 streams a connection on
// AWS, 10 Gb/s each inside a cluster placement group, 9001-byte frames); a scenario may say RDMA instead, and TCP's
// fields are refused on an RDMA network.
TEST(Scenario, TcpInstancesBringTheirStreamsAndFrames) {
  const auto base = R"({"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 1},
                        "cluster": {"instance": "aws.p3.2xlarge", "nodes": 2}})";
  const Scenario s = parse_scenario(base, "tcp.json");
  EXPECT_TRUE(s.cluster.tcp.enabled);
  EXPECT_EQ(s.cluster.tcp.streams, 16);
  EXPECT_DOUBLE_EQ(s.cluster.tcp.stream_bandwidth, 10e9 / 8);
  EXPECT_DOUBLE_EQ(s.cluster.tcp.mtu, 9001);
  EXPECT_DOUBLE_EQ(s.cluster.tcp.connection_bandwidth(), 16 * 10e9 / 8);
  // Without an instance's figures: one stream (NCCL's and Gloo's default) at a host's 15 Gb/s; Google Cloud's gVNIC
  // runs 4 streams (NCCL's auto-detection) and publishes no per-flow limit, so each carries a host's stream.
  const auto own = R"({"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 1},
                       "cluster": {"nodes": 2, "gpu": "v100", "nic": {"bandwidth": "100Gbps", "transport": "tcp"}}})";
  const Scenario on_premises = parse_scenario(own, "own.json");
  EXPECT_EQ(on_premises.cluster.tcp.streams, 1);
  EXPECT_DOUBLE_EQ(on_premises.cluster.nic.latency, 5e-6); // sockets keep the kernel stack's microseconds
  // The canonical form keeps the transport (sweep and comparison points are read back from it).
  const Scenario again = parse_scenario(to_json(on_premises).dump(), "own.json");
  EXPECT_TRUE(again.cluster.tcp.enabled);
  EXPECT_EQ(again.cluster.tcp.streams, on_premises.cluster.tcp.streams);
  EXPECT_DOUBLE_EQ(again.cluster.tcp.stream_bandwidth, on_premises.cluster.tcp.stream_bandwidth);
  EXPECT_DOUBLE_EQ(again.cluster.tcp.mtu, on_premises.cluster.tcp.mtu);
  EXPECT_DOUBLE_EQ(again.cluster.nic.latency, on_premises.cluster.nic.latency);
  EXPECT_DOUBLE_EQ(on_premises.cluster.tcp.connection_bandwidth(), 15e9 / 8);
  const Scenario gcp = parse_scenario(base, "tcp.json", {parse_override("cluster.instance=gcp.a2-highgpu-8g")});
  EXPECT_DOUBLE_EQ(gcp.cluster.tcp.connection_bandwidth(), 4 * 15e9 / 8);
  const Scenario rdma = parse_scenario(base, "tcp.json", {parse_override("cluster.nic.transport=rdma")});
  EXPECT_FALSE(rdma.cluster.tcp.enabled);
  EXPECT_EQ(rdma.cluster.tcp.connection_bandwidth(), 0);
  try {
    parse_scenario(base, "tcp.json",
                   {parse_override("cluster.nic.transport=rdma"), parse_override("cluster.nic.streams=4")});
    ADD_FAILURE() << "streams on an RDMA network were accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("/cluster/nic/streams"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace dtsim::scenario
