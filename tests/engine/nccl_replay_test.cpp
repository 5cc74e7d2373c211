// Collectives on GPUs replayed as NCCL runs them (sim/collectives/nccl.hpp): each protocol's bus bandwidth and
// latency worked out by hand from NCCL's constants and the links, and a ring across nodes spread over every NIC.
#include "replay_fixtures.hpp"
#include "sim/collectives/nccl.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/collective_request.hpp"

#include <gtest/gtest.h>

#include <map>

namespace dtsim {
namespace {

using collectives::Algorithm;
using collectives::Operation;
using collectives::Protocol;

constexpr double GB = 1e9;
constexpr double S = 1073741824.0; // 1 GiB

// HGX H100 nodes as the h100-sxm profile and the defaults describe them: NVLink4 at 450 GB/s a direction carrying
// 0.824 of it as data (370.8 GB/s, NCCL's 18 x 20.6), 0.3 us a link (two links a hop), and eight 400 Gb/s NICs.
topologies::ClusterSpec h100_nodes(int nodes) {
  auto c = testing::uniform_cluster(nodes, 8 * 50 * GB, 1e-6, 1e-6, 8);
  c.compute_capability = 90;
  c.intra_kind = topologies::IntraNodeKind::nvlink;
  c.intra = {450 * GB, 0.3e-6};
  c.fabric_efficiency = 0.824;
  c.pcie = {63 * GB, 0.5e-6};
  c.pcie_efficiency = 0.762;
  c.nic_ports = 8;
  return c;
}

constexpr double kNvlink = 450 * GB * 0.824; // 370.8 GB/s of data a direction

engine::ReplayResult run(const topologies::ClusterSpec& cluster, Algorithm algorithm, Protocol protocol, double bytes) {
  graph::Collective c;
  c.op = Operation::all_reduce;
  c.algorithm = algorithm;
  c.protocol = protocol;
  c.bytes = bytes;
  return engine::replay(cluster, testing::one_collective(cluster.gpu_count(), c), testing::cm02_options());
}

double seconds(const topologies::ClusterSpec& cluster, Algorithm algorithm, Protocol protocol, double bytes) {
  return run(cluster, algorithm, protocol, bytes).simulated_seconds;
}

// A ring all-reduce over 8 GPUs: 14 steps of S/8 each, every step paying the larger of its path's latency (0.6 us)
// and NCCL's per-step latency on NVLink (tuning.cc hwLatencies: LL 0.6, LL128 1.9, Simple 3.4 us), after the call's
// base latency (6.6, 14, 8.4 us). The bytes: Simple at the link's 370.8 GB/s; LL sends 2 bytes a byte at what its
// channels reach (llMaxBw, 141 GB/s of data); LL128 sends 16/15 bytes a byte at 0.92 of the graph's 12 x 30 GB/s
// (331.2 GB/s of data, under its 12 x 36.7 GB/s channel cap).
TEST(NcclReplay, RingBusBandwidthOfEachProtocolOnOneH100Node) {
  const auto node = h100_nodes(1);
  const double block = S / 8;
  const double simple = 8.4e-6 + 14 * (3.4e-6 + block / kNvlink);
  const double ll = 6.6e-6 + 14 * (0.6e-6 + block / (141 * GB));
  const double ll128 = 14e-6 + 14 * (1.9e-6 + block / (331.2 * GB));
  EXPECT_NEAR(seconds(node, Algorithm::ring, Protocol::simple, S), simple, 0.01 * simple);
  EXPECT_NEAR(seconds(node, Algorithm::ring, Protocol::ll, S), ll, 0.01 * ll);
  EXPECT_NEAR(seconds(node, Algorithm::ring, Protocol::ll128, S), ll128, 0.01 * ll128);
  // As nccl-tests reports it: Simple's bus bandwidth is the link's data rate, 2 (7/8) S / T.
  EXPECT_NEAR(2 * 7.0 / 8 * S / simple, 365 * GB, 2 * GB);
}

// Eight bytes: NCCL picks ring LL, whose time is all latency: 6.6 us + 14 x 0.6 us = 15 us (nccl-tests reports
// 13.7 us for 8 B on a DGX H100).
TEST(NcclReplay, SmallAllReduceIsNcclsLatency) {
  EXPECT_NEAR(seconds(h100_nodes(1), Algorithm::automatic, Protocol::automatic, 8), 15.0e-6, 0.3e-6);
}

// Eight bytes over nodes: NCCL's tree with LL, all latency. Each network hop here (PCIe 0.5 us, NIC 1 us, switch
// 1 us, NIC 1 us, PCIe 0.5 us: 4 us) is under NCCL's per-hop 5 us (tuning.cc hwLatencies, NET, Tree LL), so the time is
// NCCL's own model: 6.8 us + 2 x (7 x 0.6 us down the chain of a node + log2(nodes) x 5 us between nodes): 25.2 us on
// two nodes, 45.2 us on eight.
TEST(NcclReplay, SmallAllReduceOverNodesIsNcclsTreeLatency) {
  EXPECT_NEAR(seconds(h100_nodes(2), Algorithm::automatic, Protocol::automatic, 8), 25.2e-6, 0.3e-6);
  EXPECT_NEAR(seconds(h100_nodes(8), Algorithm::automatic, Protocol::automatic, 8), 45.2e-6, 0.3e-6);
}

// LL passes each line on as it arrives: 64 KiB through the tree over two nodes takes its latency plus the bytes at the
// protocol's rate once (NCCL's model: latency + S / bw), plus a little for each hop's forwarding at the links' speed
// (under 0.1 us a hop here); paid at every one of the tree's 16 hops, it would be 16 times that.
TEST(NcclReplay, LlTreePaysItsRateOnceNotAtEveryHop) {
  const auto cluster = h100_nodes(2);
  const double bytes = 65536;
  graph::Collective c;
  c.op = Operation::all_reduce;
  c.algorithm = Algorithm::double_binary_tree;
  c.protocol = Protocol::ll;
  c.bytes = bytes;
  std::vector<int> members(16);
  for (int i = 0; i < 16; ++i)
    members[static_cast<std::size_t>(i)] = i;
  const auto wire = collectives::wire_model(collectives::resolve(graph::collective_request(c, members, cluster)));
  ASSERT_GT(wire.rate_cap, 0);
  const double data_rate = wire.rate_cap / wire.wire_factor;
  const double latency = seconds(cluster, Algorithm::double_binary_tree, Protocol::ll, 8);
  const double t = seconds(cluster, Algorithm::double_binary_tree, Protocol::ll, bytes);
  EXPECT_GT(t - latency, bytes / data_rate);
  EXPECT_LT(t - latency, bytes / data_rate + 16 * 0.1e-6);
}

// Two H100 nodes on a rail-optimized network: the ring runs as 8 rings, each entering every node at a different GPU
// and so leaving it on a different rail (PXN relays the last GPU's data to that rail's GPU over NVLink). Every ring
// carries S/8 and every position sends 2 (15/16) of its ring's bytes, so each NIC sends 15/64 S, and no byte crosses a
// spine.
TEST(NcclReplay, RingAcrossTwoNodesSendsOnEveryNic) {
  auto c = h100_nodes(2);
  c.rail = {8, 2, 2, 1.0};
  const auto r = run(c, Algorithm::ring, Protocol::simple, S);
  std::map<std::string, double> up;
  double spine = 0;
  for (const auto& l : r.links) {
    if (l.name.find("-nic") != std::string::npos && l.name.find("_UP") != std::string::npos) up[l.name] = l.bytes;
    if (l.name.find("spine") != std::string::npos) spine += l.bytes;
  }
  ASSERT_EQ(up.size(), 16u);
  for (const auto& [name, bytes] : up)
    EXPECT_NEAR(bytes, 15.0 / 64 * S, 1e-6 * S) << name;
  EXPECT_EQ(spine, 0);
}

// A ring all-reduce on NCCL's Simple protocol, as a compute stream overlaps it in the tests below.
graph::Collective ring_simple_all_reduce(double bytes) {
  graph::Collective c;
  c.op = Operation::all_reduce;
  c.algorithm = Algorithm::ring;
  c.protocol = Protocol::simple;
  c.bytes = bytes;
  return c;
}

// A kernel of 10 ms that overlaps a 1 GiB ring all-reduce: NCCL's 24 channels on one H100 node (the ring graph's 12,
// run twice) hold 24 of the GPU's 132 SMs for the collective's T seconds, so the kernel gets 108/132 of the GPU while
// both run and finishes at 10 ms + (24/132) T, between max(parts) and their sum. Without the SM count (no wave
// model) nothing is shared and the kernel ends at 10 ms.
TEST(NcclReplay, ComputeThatOverlapsACollectiveLosesTheChannelsSms) {
  auto node = h100_nodes(1);
  node.compute_units = 132;
  const auto c = ring_simple_all_reduce(S);
  const double alone = engine::replay(node, testing::one_collective(8, c), testing::cm02_options()).simulated_seconds;
  auto g = testing::one_collective(8, c);
  g.programs[0].ops.push_back(graph::Op{"kernel", graph::Stream::compute, graph::Compute{10e-3, 0, 0}, {}});
  const double both = engine::replay(node, g, testing::cm02_options()).simulated_seconds;
  EXPECT_NEAR(both, 10e-3 + 24.0 / 132 * alone, 1e-6);
  EXPECT_GT(both, std::max(10e-3, alone));
  EXPECT_LT(both, 10e-3 + alone);
  node.compute_units = 0;
  EXPECT_NEAR(engine::replay(node, g, testing::cm02_options()).simulated_seconds, 10e-3, 1e-9);
}

// The same 1 GiB ring all-reduce beside kernels of 10 ms that stream memory, on a GPU whose kernels reach 3 TB/s.
// NCCL's ring reads and writes its GPU's memory three times for each byte its port carries (the peer's write into
// the FIFO, its read, the read of the local input or the write of the output), at the 370.8 GB/s the NVLink port
// carries: h = 3 x 370.8 / 3000 = 0.3708 of the bandwidth while the collective runs. A kernel whose time is all
// memory traffic (m = 0) runs at 1 - h while they overlap and ends at 10 ms + h T; one half math, half memory at
// 1 / (0.5 / (1 - s) + 0.5 / (1 - h)) with s = 24/132, so it loses 1 - that rate of every overlapped second.
TEST(NcclReplay, ComputeThatOverlapsACollectiveSharesTheMemoryBandwidth) {
  auto node = h100_nodes(1);
  node.compute_units = 132;
  node.memory_bandwidth = 3000 * GB;
  const auto c = ring_simple_all_reduce(S);
  const double alone = engine::replay(node, testing::one_collective(8, c), testing::cm02_options()).simulated_seconds;
  const double h = 3 * kNvlink / (3000 * GB), s = 24.0 / 132;
  const auto beside = [&](double math_seconds) {
    auto g = testing::one_collective(8, c);
    graph::Compute kernel{10e-3, 1e9, 1e9, math_seconds, 1.0};
    g.programs[0].ops.push_back(graph::Op{"kernel", graph::Stream::compute, kernel, {}});
    return engine::replay(node, g, testing::cm02_options()).simulated_seconds;
  };
  EXPECT_NEAR(beside(1e-12), 10e-3 + h * alone, 1e-6); // all memory traffic
  EXPECT_NEAR(beside(10e-3), 10e-3 + s * alone, 1e-6); // all math: the SMs only, as before
  const double half_rate = 1 / (0.5 / (1 - s) + 0.5 / (1 - h));
  EXPECT_NEAR(beside(5e-3), 10e-3 + (1 - half_rate) * alone, 1e-6);
  // Across two nodes the ring's pace is the GPU's share of its node's NICs (8 x 50 GB/s over 8 GPUs): 3 x 50 / 3000.
  auto two = h100_nodes(2);
  two.compute_units = 132;
  two.memory_bandwidth = 3000 * GB;
  const double across = engine::replay(two, testing::one_collective(16, c), testing::cm02_options()).simulated_seconds;
  auto g = testing::one_collective(16, c);
  g.programs[0].ops.push_back(
      graph::Op{"kernel", graph::Stream::compute, graph::Compute{50e-3, 1e9, 1e9, 1e-12, 1.0}, {}});
  EXPECT_NEAR(engine::replay(two, g, testing::cm02_options()).simulated_seconds, 50e-3 + 0.05 * across, 1e-6);
}

} // namespace
} // namespace dtsim
