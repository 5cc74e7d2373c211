// NCCL's tuning model as dtsim transcribes it (sim/collectives/nccl.hpp): every expected value is worked out by hand
// from the constants of NCCL 2.30.7 (src/graph/tuning.cc, search.cc, enqueue.cc), and the choices are held against
// what NCCL logged on a real node.
#include "sim/collectives/closed_form.hpp"
#include "sim/collectives/nccl.hpp"
#include "sim/graph/collective_request.hpp"

#include <gtest/gtest.h>

namespace dtsim::collectives {
namespace {

constexpr double GB = 1e9;

// An 8-GPU HGX H100 node as NCCL counts it: 18 NVLink4 links at 20.6 GB/s (topo.h SM90_NVLINK_BW) = 370.8 GB/s.
NcclSystem h100(bool nvls = false) {
  NcclSystem s;
  s.compute_capability = 90;
  s.nvlink = s.nvswitch = true;
  s.gpu_bandwidth = 18 * 20.6 * GB;
  s.nic_bandwidth = 50 * GB; // 400 Gb/s NDR
  s.nics = 8;
  s.nvls = nvls;
  return s;
}

NcclSystem a100() {
  NcclSystem s = h100();
  s.compute_capability = 80;
  s.gpu_bandwidth = 12 * 20.0 * GB; // 12 NVLink3 links at 20 GB/s (SM80_NVLINK_BW)
  s.nic_bandwidth = 25 * GB;        // 200 Gb/s HDR
  return s;
}

// search.cc: on one node the fastest speed a GPU carries is 60 GB/s (sm90SpeedArrayIntra), 6 channels (360 of
// 370.8 GB/s); ncclTopoDupChannels doubles them into 12 at 30 (60 >= 50). The communicator runs each twice: 24, the
// count NCCL logs on 8 x A100 and H100.
TEST(NcclRingGraph, OneH100NodeRunsTwelveRingsAtThirtyGigabytes) {
  const auto g = nccl_ring_graph(h100(), 1);
  EXPECT_EQ(g.channels, 12);
  EXPECT_DOUBLE_EQ(g.intra, 30 * GB);
  EXPECT_EQ(NcclTuning(Operation::all_reduce, 8, 1, h100()).comm_channels(), 24);
}

// A100: 240 GB/s; 40 GB/s x 6 channels fills it; doubled (40 >= 25, and compute capability 8.0 is not above 80) to
// 12 at 20.
TEST(NcclRingGraph, OneA100NodeRunsTwelveRingsAtTwentyGigabytes) {
  const auto g = nccl_ring_graph(a100(), 1);
  EXPECT_EQ(g.channels, 12);
  EXPECT_DOUBLE_EQ(g.intra, 20 * GB);
}

// Across nodes a channel also crosses one NIC: H100 with eight 50 GB/s NICs. 48 GB/s fits 7 channels in 370.8
// (336); 45 GB/s fits 8 (360), one per NIC; 24 GB/s would fit 15 (360, a tie the faster speed wins). 45 < 50: no
// doubling on Hopper with more than 4 channels.
TEST(NcclRingGraph, TwoH100NodesRunOneRingPerNicAtFortyFive) {
  const auto g = nccl_ring_graph(h100(), 2);
  EXPECT_EQ(g.channels, 8);
  EXPECT_DOUBLE_EQ(g.inter, 45 * GB);
}

// A V100 node on 50 GbE (6.25 GB/s), one NIC: search.cc starts at the fastest speed the NIC carries, 6 GB/s, one
// channel; it lowers the speed while the next is more than 0.49 of the kept graph's (5, 4 and 3 give at most 6 GB/s
// in all, a tie the faster graph keeps) and stops before 2.4. Maximising channels x speed alone would take 26
// channels at 0.24 GB/s (6.24), each holding an SM for as long as a gradient bucket is in flight. On 25 GbE (3.125
// GB/s): one channel at 3. 6 and 3 are under 25 GB/s: no doubling.
TEST(NcclRingGraph, ASlowNicGetsOneFastChannelNotManySlowOnes) {
  NcclSystem v100;
  v100.compute_capability = 70;
  v100.gpu_bandwidth = 12 * GB; // one GPU behind PCIe
  v100.nics = 1;
  v100.nic_bandwidth = 6.25 * GB;
  auto g = nccl_ring_graph(v100, 8);
  EXPECT_EQ(g.channels, 1);
  EXPECT_DOUBLE_EQ(g.inter, 6 * GB);
  v100.nic_bandwidth = 3.125 * GB;
  g = nccl_ring_graph(v100, 8);
  EXPECT_EQ(g.channels, 1);
  EXPECT_DOUBLE_EQ(g.inter, 3 * GB);
}

// A channel that leaves the node crosses PCIe between its GPU and the NIC, and NCCL's search takes the channel's speed
// from every link on that path (search.cc, ncclTopoSearchTryGpu -> ncclTopoFollowPath): a V100's PCIe 3.0 x16, which
// NCCL counts at 12 GB/s (15.75 GB/s x 0.762, topo.cc's kvDictPciGen), bounds a 400 Gb/s NIC (50 GB/s) at 12 GB/s,
// so its graph is a 100 Gb/s NIC's (12.5 GB/s, bounded the same). A 25 Gb/s NIC (3.125 GB/s) is its own bound.
TEST(NcclRingGraph, ANicFasterThanPcieGetsNoMoreChannels) {
  topologies::ClusterSpec c;
  c.nodes = 4;
  c.gpus_per_node = 8;
  c.compute_capability = 70;
  c.intra_kind = topologies::IntraNodeKind::nvlink;
  c.intra.bandwidth = 150e9;
  c.pcie.bandwidth = 15.75e9;
  c.pcie_efficiency = 0.762;
  c.nic.bandwidth = 50e9;
  const auto fast = graph::nccl_system(c);
  EXPECT_DOUBLE_EQ(fast.nic_bandwidth, 15.75e9 * 0.762);
  c.nic.bandwidth = 12.5e9;
  const auto g = nccl_ring_graph(graph::nccl_system(c), 4), g_fast = nccl_ring_graph(fast, 4);
  EXPECT_EQ(g_fast.channels, g.channels);
  EXPECT_DOUBLE_EQ(g_fast.inter, g.inter);
  EXPECT_LE(g_fast.channels * g_fast.inter, 12.0 * GB + 1);
  c.nic.bandwidth = 3.125e9;
  EXPECT_DOUBLE_EQ(graph::nccl_system(c).nic_bandwidth, 3.125e9);
}

// A faster NIC never gives a ring graph less bandwidth, from 1 to 400 Gb/s in steps of 1 Gb/s.
TEST(NcclRingGraph, AFasterNicNeverGivesLessBandwidth) {
  for (const int cc : {70, 80, 90}) {
    NcclSystem s = cc == 90 ? h100() : a100();
    s.compute_capability = cc;
    s.nics = 1;
    double last = 0;
    for (int gbps = 1; gbps <= 400; ++gbps) {
      s.nic_bandwidth = gbps * 0.125 * GB;
      const auto g = nccl_ring_graph(s, 4);
      const double total = g.channels * g.inter;
      EXPECT_GE(total, last - 1) << "compute capability " << cc << ", " << gbps << " Gb/s: " << g.channels << " x "
                                 << g.inter / GB << " GB/s";
      EXPECT_LE(g.inter, s.nic_bandwidth + 1);
      last = total;
    }
  }
}

// Bandwidths of one H100 node's ring all-reduce (tuning.cc): the graph's 12 x 30 = 360 GB/s of bus bandwidth; LL
// halves it and caps it at llMaxBw 141 GB/s; LL128 keeps 0.92 of it under 36.7 GB/s a channel (440.4); then each is
// converted to algorithm bandwidth by n / (2 (n - 1)) = 8 / 14.
TEST(NcclTuning, RingBandwidthPerProtocolOnOneH100Node) {
  const NcclTuning t(Operation::all_reduce, 8, 1, h100());
  EXPECT_NEAR(t.bus_bandwidth(NcclAlgorithm::ring, Protocol::simple), 360 * GB * 8 / 14, 1e3);
  EXPECT_NEAR(t.bus_bandwidth(NcclAlgorithm::ring, Protocol::ll), 141 * GB * 8 / 14, 1e3);
  EXPECT_NEAR(t.bus_bandwidth(NcclAlgorithm::ring, Protocol::ll128), 0.92 * 360 * GB * 8 / 14, 1e3);
  // Latency: base + 14 steps of the NVLink hardware latency: LL 6.6 + 14 x 0.6, LL128 14 + 14 x 1.9, Simple
  // 8.4 + 14 x 3.4 (us).
  EXPECT_NEAR(t.latency(NcclAlgorithm::ring, Protocol::ll), 15.0e-6, 1e-12);
  EXPECT_NEAR(t.latency(NcclAlgorithm::ring, Protocol::ll128), 40.6e-6, 1e-12);
  EXPECT_NEAR(t.latency(NcclAlgorithm::ring, Protocol::simple), 56.0e-6, 1e-12);
}

// NVLS on one node: 8 heads at 40 GB/s (8 x 50 would exceed 370.8); per channel 40 x 0.85 (nvlsEfficiency) x 7/8 x 2
// = 59.5 GB/s, x 8 channels = 476 GB/s of bus bandwidth (nccl-tests reports 466-480 on an H100 node), x 8/14.
TEST(NcclTuning, NvlsBandwidthOnOneH100Node) {
  const NcclTuning t(Operation::all_reduce, 8, 1, h100(true));
  EXPECT_NEAR(t.bus_bandwidth(NcclAlgorithm::nvls, Protocol::simple), 476 * GB * 8 / 14, 1e3);
  EXPECT_NEAR(t.latency(NcclAlgorithm::nvls, Protocol::simple), 25e-6, 1e-12);
  EXPECT_EQ(t.bus_bandwidth(NcclAlgorithm::nvls, Protocol::ll), 0); // NVLS runs Simple only
}

// The choice, by hand: ring LL costs 15 us + S / 80.57 GB/s, NVLS 25 us + S / 272 GB/s; they cross at
// S = 10 us / (1/80.57 - 1/272) GB/s = 1.145 MB. NCCL 2.26 logged on an H100 node (nccl-tests issue #309, TUNING):
// Ring/LL from 8 B to 1 MB, NVLS/Simple from 2 MB on.
TEST(NcclTuning, OneH100NodePicksRingLlUpToAMegabyteThenNvls) {
  const NcclTuning t(Operation::all_reduce, 8, 1, h100(true));
  for (double bytes : {8.0, 1024.0, 65536.0, 1048576.0}) {
    const auto c = t.choose(bytes);
    EXPECT_EQ(c.algorithm, NcclAlgorithm::ring) << bytes;
    EXPECT_EQ(c.protocol, Protocol::ll) << bytes;
  }
  for (double bytes : {2097152.0, 67108864.0, 8589934592.0})
    EXPECT_EQ(t.choose(bytes).algorithm, NcclAlgorithm::nvls) << bytes;
}

// Without NVLS the ring moves to Simple once its bandwidth pays for its latency: Simple 56 us + S / 205.7 GB/s beats
// LL128 40.6 us + S / 189.3 GB/s above S = 15.4 us / (1/189.3 - 1/205.7) GB/s = 36 MB, and at a gigabyte.
TEST(NcclTuning, LargeRingsRunSimple) {
  const NcclTuning t(Operation::all_reduce, 8, 1, h100());
  const auto c = t.choose(1073741824.0);
  EXPECT_EQ(c.algorithm, NcclAlgorithm::ring);
  EXPECT_EQ(c.protocol, Protocol::simple);
  EXPECT_EQ(t.choose(1073741824.0, std::nullopt, Protocol::ll128).protocol, Protocol::ll128); // NCCL_PROTO=LL128
}

// enqueue.cc: a call runs on fewer channels while bytes < channels x threads x threshold: Simple 512 threads x 64 B
// a channel (32 KiB), so 256 KiB runs on 8 of the 24; LL's ring threshold is 8 B x 8 ranks a thread, 32 KiB a
// channel too, so 64 KiB runs on 2.
TEST(NcclTuning, SmallCallsRunOnFewerChannels) {
  const NcclTuning t(Operation::all_reduce, 8, 1, h100());
  EXPECT_EQ(t.channels(NcclAlgorithm::ring, Protocol::simple, 262144), 8);
  EXPECT_EQ(t.channels(NcclAlgorithm::ring, Protocol::ll, 65536), 2);
  EXPECT_EQ(t.channels(NcclAlgorithm::ring, Protocol::simple, 1073741824.0), 24);
}

// What the engine applies: LL puts 16 bytes on the wire for 8 of data, LL128 128 for 120; a 64 KiB LL ring runs on 2
// of 24 channels (each of a channel's 512 threads then carries its threshold, 8 x 8 bytes) and is priced, as NCCL's
// model prices it, at LL's whole rate: 141 GB/s of data (llMaxBw), twice that on the wire.
TEST(NcclWire, ProtocolsCostWireBytesAndRate) {
  EXPECT_DOUBLE_EQ(wire_factor(Protocol::ll), 2.0);
  EXPECT_DOUBLE_EQ(wire_factor(Protocol::ll128), 128.0 / 120.0);
  EXPECT_DOUBLE_EQ(wire_factor(Protocol::simple), 1.0);
  Request r;
  r.ranks = 8;
  r.bytes = 65536;
  r.node_of.assign(8, 0);
  r.nccl = h100();
  r = resolve(r);
  ASSERT_EQ(r.algorithm, Algorithm::ring);
  ASSERT_EQ(r.protocol, Protocol::ll);
  const auto w = wire_model(r);
  EXPECT_EQ(w.channels, 2);
  EXPECT_NEAR(w.rate_cap, 141 * GB * 2, 1e3);
  EXPECT_NEAR(w.base_latency, 6.6e-6, 1e-12);
  EXPECT_NEAR(w.step_latency[static_cast<int>(LinkClass::nvlink)], 0.6e-6, 1e-12);
  EXPECT_TRUE(w.eager_sends);
}

// Without NCCL (CPU ranks) nothing changes: MPI's choice, Simple, no cap, no latency beyond the links'.
// The closed form of an LL tree (what the search's estimate prices) as NCCL's model has it: the base latency, one
// network hop's latency at each of 2 x 4 hops, up and down a binary tree of 16 positions (height 4: 1 + 2 + 4 + 8 <
// 16), each the larger of the path's alpha and NCCL's 5 us, and the bytes, 2 on the wire for each, at the protocol's
// rate once.
TEST(NcclWire, LlTreeClosedFormPaysTheRateOnce) {
  Request r;
  r.ranks = 16;
  r.bytes = 65536;
  r.node_of.assign(16, 0);
  for (int i = 8; i < 16; ++i)
    r.node_of[static_cast<std::size_t>(i)] = 1;
  r.nccl = h100();
  r.algorithm = Algorithm::double_binary_tree;
  r.protocol = Protocol::ll;
  r = resolve(r);
  const auto w = wire_model(r);
  ASSERT_GT(w.rate_cap, 0);
  const double alpha = 2e-6;
  const double expected = w.base_latency + 2 * 4 * 5e-6 + 65536 * 2 / w.rate_cap;
  EXPECT_NEAR(closed_form_time(r, w, LinkClass::network, alpha, 1e12, 0), expected, 1e-12);
}

TEST(NcclWire, CpuRanksKeepMpisAlgorithmsAndTheLinks) {
  Request r;
  r.ranks = 16;
  r.bytes = 1024;
  r = resolve(r);
  EXPECT_EQ(r.algorithm, Algorithm::recursive_doubling);
  EXPECT_EQ(r.protocol, Protocol::simple);
  const auto w = wire_model(r);
  EXPECT_EQ(w.rate_cap, 0);
  EXPECT_EQ(w.base_latency, 0);
  EXPECT_FALSE(w.eager_sends);
  r.protocol = Protocol::ll;
  EXPECT_THROW(resolve(r), std::invalid_argument);
}

} // namespace
} // namespace dtsim::collectives
