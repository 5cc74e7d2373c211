// Tiers of switches with oversubscription: contention at the uplinks, which only a flow-level simulation shows.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

constexpr double kNic = 12.5e9;

// Seconds for one collective over every GPU of the cluster, on the plain alpha-beta network model.
double collective_time(const topologies::ClusterSpec& cluster, collectives::Operation op,
                       collectives::Algorithm algorithm, double bytes) {
  graph::Collective c;
  c.op = op;
  c.algorithm = algorithm;
  c.bytes = bytes;
  return engine::replay(cluster, testing::one_collective(cluster.gpu_count(), c), testing::cm02_options())
      .simulated_seconds;
}

double all_to_all_time(const topologies::ClusterSpec& cluster, double bytes) {
  return collective_time(cluster, collectives::Operation::all_to_all, collectives::Algorithm::direct, bytes);
}

double ring_all_reduce_time(const topologies::ClusterSpec& cluster, double bytes) {
  return collective_time(cluster, collectives::Operation::all_reduce, collectives::Algorithm::ring, bytes);
}

// 32 single-GPU nodes, 4 per leaf, each sending S/32 to every other. Non-blocking, the NICs bound it: each sends
// 31/32 S. At 2:1 a leaf's uplink carries 4 nodes x 28 remote peers x S/32 = 3.5 S at 4B/2 = 2B: 1.75 S/B.
// (The "about twice" is the limit for many leaves, 2 (n - 4)/(n - 1).)
TEST(Oversubscription, AllToAllOnATwoToOneLeafSpineIsUplinkBound) {
  const double S = 1e9;
  auto flat = testing::uniform_cluster(32, kNic, 0, 0);
  auto nonblocking = flat;
  nonblocking.tiers = {{4, 1.0}};
  auto oversubscribed = flat;
  oversubscribed.tiers = {{4, 2.0}};
  const double t_flat = all_to_all_time(flat, S);
  const double t_nonblocking = all_to_all_time(nonblocking, S);
  const double t_over = all_to_all_time(oversubscribed, S);
  EXPECT_NEAR(t_flat, 31.0 / 32 * S / kNic, 0.01 * t_flat);     // the single-switch closed form
  EXPECT_NEAR(t_nonblocking, t_flat, 0.01 * t_flat);            // 1:1 uplinks never bind
  EXPECT_NEAR(t_over, 1.75 * S / kNic, 0.05 * 1.75 * S / kNic); // the uplink bound
  EXPECT_NEAR(t_over / t_nonblocking, 1.75 / (31.0 / 32), 0.05);
}

// A three-tier fat-tree: 2 pods of 2 leaves of 2 nodes; at 1:1 the ring all-reduce runs as on one switch.
TEST(Oversubscription, NonBlockingFatTreeRunsARingAsOneSwitchDoes) {
  auto flat = testing::uniform_cluster(8, kNic, 0, 0);
  auto tree = flat;
  tree.tiers = {{2, 1.0}, {2, 1.0}};
  const double on_switch = ring_all_reduce_time(flat, 1e9);
  EXPECT_NEAR(ring_all_reduce_time(tree, 1e9), on_switch, 0.01 * on_switch);
}

// The same 8-rank ring all-reduce inside one NVSwitch node (300 GB/s ports) and across 8 single-GPU nodes
// (50 GB/s NICs): the bandwidth terms differ by the NVLink-to-NIC ratio, 6.
TEST(Fabric, RingInsideAnNvSwitchNodeBeatsTheSameAcrossNodesByTheBandwidthRatio) {
  auto node = testing::uniform_cluster(1, 50e9, 0, 0, 8);
  node.intra_kind = topologies::IntraNodeKind::nvlink;
  node.intra = {300e9, 0};
  const auto across = testing::uniform_cluster(8, 50e9, 0, 0);
  const double inside = ring_all_reduce_time(node, 4e9);
  const double outside = ring_all_reduce_time(across, 4e9);
  EXPECT_NEAR(inside, 2 * 7.0 / 8 * 4e9 / 300e9, 0.01 * inside);
  EXPECT_NEAR(outside / inside, 300e9 / 50e9, 0.06);
}

} // namespace
} // namespace dtsim

namespace dtsim {
namespace {

// A ring all-reduce on a ring of nodes: every step crosses one ring link, so alpha is one link's latency
// (the PCIe hops are free here) and the bandwidth term is the link's: 2(n-1)(L + S/(nB)).
TEST(Torus, RingAllReduceOnARingTopologyMatchesTheClosedForm) {
  auto ring = testing::uniform_cluster(8, kNic, 2e-6, 0);
  ring.torus = {8};
  const double S = 256e6;
  const double expected = 2 * 7 * (2e-6 + S / 8 / kNic);
  EXPECT_NEAR(ring_all_reduce_time(ring, S), expected, 0.01 * expected);
}

// On a 4 x 4 torus, an all-to-all must cross the bisection: 8 links each way carry half of every node's traffic
// to the other half, 8 x 8 x S/16 = 4 S; the replay cannot beat 4 S / (8 B).
TEST(Torus, AllToAllIsNoFasterThanItsBisectionAllows) {
  auto torus = testing::uniform_cluster(16, kNic, 0, 0);
  torus.torus = {4, 4};
  const double S = 1e9;
  EXPECT_GE(all_to_all_time(torus, S), 0.99 * 4 * S / (8 * kNic));
}

} // namespace
} // namespace dtsim
