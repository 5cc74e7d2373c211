// `dtsim collective --instance NAME --nodes N`: a benchmark on a cloud instance preset without a scenario file.
// The cluster is built in memory and read by the scenario loader, so its errors and --set overrides are the usual
// ones; the option combinations that make no sense are refused with status 2.
#include "cli_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace dtsim::testing {
namespace {

const std::string kCluster = R"({
  "version": 1,
  "model": {"preset": "mlp-small", "batch_per_gpu": 1},
  "cluster": {"nodes": 2, "gpu": "v100", "nic": {"bandwidth": "100Gbps", "latency": "5us"}}
})";

TEST(CollectiveInstance, RunsOnNodesOfTheInstance) {
  TempDir dir;
  const auto inv = run_dtsim(
      "collective --instance aws.p4d.24xlarge --nodes 2 --op all-reduce --sizes 1MiB --fidelity aggregate", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  // p4d.24xlarge: 8 A100 40 GB per node (topologies/instances/aws.p4d.24xlarge.json), so 2 nodes are 16 ranks.
  const auto header = inv.out.substr(0, inv.out.find('\n'));
  EXPECT_NE(header.find("all-reduce, 16 ranks on 2 nodes of 8 x a100-40gb"), std::string::npos) << header;
  EXPECT_NE(inv.out.find("1048576"), std::string::npos) << inv.out;
}

TEST(CollectiveInstance, NodesDefaultToOneAndSetOverridesApply) {
  TempDir dir;
  auto inv = run_dtsim("collective --instance aws.p4d.24xlarge --sizes 1MiB --fidelity aggregate", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("8 ranks on 1 nodes"), std::string::npos) << inv.out;
  // --set comes after the document, so it wins over --nodes.
  inv = run_dtsim(
      "collective --instance aws.p4d.24xlarge --nodes 2 --set cluster.nodes=3 --sizes 1MiB --fidelity aggregate", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("24 ranks on 3 nodes"), std::string::npos) << inv.out;
}

// Two single-V100 nodes: a ring all-reduce over n = 2 ranks is 2(n-1) = 2 steps, each sending S/n over the only
// inter-node link, the NIC (PCIe, 15.75 GB/s, is wider). T = 2(n-1)/n S/B + 2(n-1) latency terms, so
// busbw = 2(n-1)/n S/T -> B once the latency terms (microseconds against ~0.9 s for 1 GiB) are negligible.
TEST(CollectiveInstance, RingBusBandwidthIsTheInstanceNicBandwidth) {
  std::ifstream file(std::string(DTSIM_SOURCE_DIR) + "/topologies/instances/aws.p3.2xlarge.json");
  ASSERT_TRUE(file) << "no aws.p3.2xlarge instance file";
  const auto instance = nlohmann::json::parse(file);
  const double nic_bytes_per_second = instance.at("network").at("nics").get<double>() *
                                      instance.at("network").at("nic_bandwidth_bits_per_second").get<double>() / 8;
  ASSERT_EQ(instance.at("gpus").get<int>(), 1);

  TempDir dir;
  const auto csv = dir.path() / "c.csv";
  const auto inv = run_dtsim(
      "collective --instance aws.p3.2xlarge --nodes 2 --algo ring --sizes 1GiB --csv '" + csv.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("2 ranks on 2 nodes of 1 x v100"), std::string::npos) << inv.out;
  const auto r = collective_row(csv);
  ASSERT_TRUE(r.parsed) << r.text;
  EXPECT_EQ(r.protocol, "Simple"); // a gigabyte: NCCL's bandwidth protocol
  EXPECT_EQ(r.algorithm, "ring");
  EXPECT_NEAR(r.busbw, r.algbw, 1e-6 * r.busbw); // nccl-tests' factor 2(n-1)/n is 1 for n = 2
  EXPECT_NEAR(r.busbw, nic_bytes_per_second, 0.01 * nic_bytes_per_second);
}

TEST(CollectiveInstance, UnknownInstanceIsRefusedNamingTheOption) {
  TempDir dir;
  const auto inv = run_dtsim("collective --instance aws.p9.mega --sizes 1MiB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--instance"), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("unknown cloud instance \"aws.p9.mega\""), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("aws.p4d.24xlarge"), std::string::npos) << inv.err; // the list of those there are
}

TEST(CollectiveInstance, NodesWithoutInstanceIsRefused) {
  TempDir dir;
  const auto file = dir.write("cluster.json", kCluster);
  const auto inv = run_dtsim("collective '" + file.string() + "' --nodes 2 --sizes 1MiB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--nodes"), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("--set cluster.nodes=N"), std::string::npos) << inv.err;
}

TEST(CollectiveInstance, ScenarioAndInstanceTogetherAreRefused) {
  TempDir dir;
  const auto file = dir.write("cluster.json", kCluster);
  const auto inv = run_dtsim("collective '" + file.string() + "' --instance aws.p3.2xlarge --sizes 1MiB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("not both"), std::string::npos) << inv.err;
}

TEST(CollectiveInstance, NeitherScenarioNorInstanceIsRefused) {
  TempDir dir;
  const auto inv = run_dtsim("collective --sizes 1MiB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("scenario file or --instance"), std::string::npos) << inv.err;
}

} // namespace
} // namespace dtsim::testing
