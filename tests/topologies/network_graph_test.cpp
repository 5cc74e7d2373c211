// The cluster as a graph: the routes the engine takes, their bottlenecks, diameter and bisection, by hand.
#include "topologies/network_graph.hpp"

#include <gtest/gtest.h>

namespace dtsim::topologies {
namespace {

ClusterSpec two_nvswitch_nodes() {
  ClusterSpec c;
  c.nodes = 2;
  c.gpus_per_node = 8;
  c.intra_kind = IntraNodeKind::nvlink;
  c.intra = {300e9, 1e-6};
  c.pcie = {31.5e9, 1e-6};
  c.nic = {50e9, 5e-6};
  c.switch_latency = 1e-6;
  return c;
}

TEST(NetworkGraph, InsideANodeGpusTalkOverNvlink) {
  const auto p = path_between(build_network(two_nvswitch_nodes()), 0, 3);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu0-nvlink", "gpu3-nvlink"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, 300e9);
  EXPECT_DOUBLE_EQ(p.latency, 2e-6);
}

TEST(NetworkGraph, AcrossNodesGpusGoThroughPcieTheNicsAndTheSwitch) {
  const auto p = path_between(build_network(two_nvswitch_nodes()), 1, 9);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu1-pcie", "node0-nic", "node1-nic", "gpu9-pcie"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, 31.5e9);                          // PCIe is narrower than the NIC
  EXPECT_NEAR(p.latency, 1e-6 + 5e-6 + 1e-6 + 5e-6 + 1e-6, 1e-15); // PCIe, NIC, switch, NIC, PCIe
}

TEST(NetworkGraph, DiameterAndBisectionOfASingleSwitch) {
  const auto c = two_nvswitch_nodes();
  EXPECT_EQ(gpu_diameter(build_network(c)), 4); // PCIe, NIC, NIC, PCIe
  auto four = c;
  four.nodes = 4;
  // Half the nodes on each side: their NICs carry the cut, 2 x 50 GB/s.
  EXPECT_DOUBLE_EQ(summarize(four).bisection_bandwidth, 2 * 50e9);
}

TEST(NetworkGraph, UnknownGpusAreRefused) {
  EXPECT_THROW(path_between(build_network(two_nvswitch_nodes()), 0, 16), std::out_of_range);
}

} // namespace
} // namespace dtsim::topologies

namespace dtsim::topologies {
namespace {

ClusterSpec single_gpu_nodes(int nodes) {
  ClusterSpec c;
  c.nodes = nodes;
  c.intra_kind = IntraNodeKind::pcie;
  c.intra = {16e9, 1e-6};
  c.pcie = c.intra;
  c.nic = {12.5e9, 1e-6};
  c.switch_latency = 1e-6;
  return c;
}

// Bisection: cut the top switch's children in half; the cut crosses the uplinks of one half.
TEST(Tiers, BisectionOfLeafSpinesAndFatTreesByHand) {
  auto c = single_gpu_nodes(16);
  c.tiers = {{4, 1.0}};
  EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, 8 * 12.5e9); // 2 leaves of 4 x B: as one switch
  c.tiers = {{4, 2.0}};
  EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, 2 * (4 * 12.5e9 / 2)); // 2 leaves' uplinks of 2B
  auto tree = single_gpu_nodes(32);
  tree.tiers = {{4, 1.0}, {4, 2.0}}; // pods of 16 nodes; pod uplink 4 x 4B / 2 = 8B
  EXPECT_DOUBLE_EQ(summarize(tree).bisection_bandwidth, 1 * 8 * 12.5e9);
  EXPECT_EQ(summarize(tree).switches, 1 + 8 + 2);
}

// Diameter in links: PCIe, NIC, then up and down each tier's uplinks, NIC, PCIe.
TEST(Tiers, DiameterGrowsByTwoLinksPerTier) {
  auto c = single_gpu_nodes(16);
  EXPECT_EQ(gpu_diameter(build_network(c)), 4); // PCIe, NIC, NIC, PCIe
  c.tiers = {{4, 1.0}};
  const auto p = path_between(build_network(c), 0, 15);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu0-pcie", "node0-nic", "leaf0-uplink", "leaf3-uplink", "node15-nic",
                                               "gpu15-pcie"}));
  EXPECT_NEAR(p.latency, 1e-6 + 1e-6 + 3 * 1e-6 + 1e-6 + 1e-6, 1e-15); // 3 switches crossed
}

TEST(Tiers, TiersThatDoNotFitTheNodesAreExplained) {
  auto c = single_gpu_nodes(10);
  c.tiers = {{4, 1.0}};
  EXPECT_NE(check_tiers(c).find("multiple of 4"), std::string::npos) << check_tiers(c);
  c.nodes = 8;
  c.tiers = {{4, 0.5}};
  EXPECT_NE(check_tiers(c).find("oversubscription"), std::string::npos) << check_tiers(c);
}

} // namespace
} // namespace dtsim::topologies

namespace dtsim::topologies {
namespace {

// Tori: the farthest nodes are floor(d/2) hops apart in each dimension; halving the largest dimension d cuts two
// links per ring along it, 2 N / d links of the NIC's bandwidth.
TEST(Torus, DiameterAndBisectionByHand) {
  ClusterSpec c = single_gpu_nodes(16);
  c.torus = {4, 4};
  EXPECT_EQ(gpu_diameter(build_network(c)), 2 + 2 + 2); // PCIe, 2 + 2 hops, PCIe
  EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, 2.0 * 16 / 4 * 12.5e9);
  EXPECT_EQ(summarize(c).switches, 0);
  ClusterSpec cube = single_gpu_nodes(64);
  cube.torus = {4, 4, 4};
  EXPECT_EQ(gpu_diameter(build_network(cube)), 2 + 2 + 2 + 2);
  ClusterSpec ring = single_gpu_nodes(8);
  ring.torus = {8};
  EXPECT_EQ(gpu_diameter(build_network(ring)), 4 + 2);
  EXPECT_DOUBLE_EQ(summarize(ring).bisection_bandwidth, 2 * 12.5e9);
}

} // namespace
} // namespace dtsim::topologies
