// TCP networks (topologies/cluster.hpp TcpTransport): Ethernet and TCP/IP framing take their share of the line rate,
// and a connection between two ranks is as fast as its streams allow.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

constexpr double kGbps = 1e9 / 8;
constexpr double kBytes = 100e6;

// Rank 0 sends kBytes to rank 1 on the other node, over Ethernet (25 Gb/s unless said) with 10 us of latency a NIC
// link.
double transfer_seconds(const topologies::TcpTransport& tcp, double nic = 25 * kGbps) {
  auto cluster = testing::uniform_cluster(2, nic, 10e-6, 0);
  cluster.tcp = tcp;
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"send", graph::Stream::p2p, graph::SendRecv{1, kBytes, true}, {}}}});
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, kBytes, false}, {}}}});
  g.rank_program = {0, 1};
  return engine::replay(cluster, g, testing::cm02_options()).simulated_seconds;
}

// A 1500-byte frame carries 1448 bytes of data (IPv4 20 + TCP 20 + timestamps 12 of headers) for 1538 bytes on the
// wire (Ethernet header 14, FCS 4, preamble 8, inter-frame gap 12): 25 Gb/s moves 23.54 Gb/s of data. Jumbo frames of
// 9001 bytes: 8949 of 9039.
TEST(Tcp, FramingTakesItsShareOfTheLineRate) {
  topologies::TcpTransport tcp;
  tcp.enabled = true;
  tcp.stream_bandwidth = 0; // no stream limit: the framing alone
  const double latency = 2 * 10e-6;
  EXPECT_NEAR(transfer_seconds(tcp), latency + kBytes / (25 * kGbps * 1448 / 1538), 1e-9);
  tcp.mtu = 9001;
  EXPECT_NEAR(transfer_seconds(tcp), latency + kBytes / (25 * kGbps * 8949 / 9039), 1e-9);
  EXPECT_NEAR(transfer_seconds({}), latency + kBytes / (25 * kGbps), 1e-9); // RDMA: the line rate
}

// AWS limits a single flow to 5 Gb/s outside a cluster placement group: one stream moves 5 Gb/s, four move 20 (still
// under the NIC's 23.5 of data), eight are held by the NIC.
TEST(Tcp, AConnectionIsAsFastAsItsStreams) {
  topologies::TcpTransport tcp;
  tcp.enabled = true;
  tcp.stream_bandwidth = 5 * kGbps;
  const double latency = 2 * 10e-6, nic = 25 * kGbps * 1448 / 1538;
  EXPECT_NEAR(transfer_seconds(tcp), latency + kBytes / (5 * kGbps), 1e-9);
  tcp.streams = 4;
  EXPECT_NEAR(transfer_seconds(tcp), latency + kBytes / (20 * kGbps), 1e-9);
  tcp.streams = 8;
  EXPECT_NEAR(transfer_seconds(tcp), latency + kBytes / nic, 1e-9);
}

// With nothing said of its streams, a connection is one stream (NCCL's socket transport outside AWS and Google Cloud;
// Gloo) at what a host's single stream carries, 15 Gb/s (ESnet's untuned end): under 25 GbE's 23.5 Gb/s of data, it
// holds the transfer to 15; on 10 GbE the NIC's 9.41 Gb/s of data does.
TEST(Tcp, AConnectionOfNcclsDefaultsIsOneStreamOfAHost) {
  topologies::TcpTransport tcp;
  tcp.enabled = true;
  EXPECT_EQ(tcp.streams, 1);
  const double latency = 2 * 10e-6;
  EXPECT_NEAR(transfer_seconds(tcp), latency + kBytes / (15 * kGbps), 1e-9);
  EXPECT_NEAR(transfer_seconds(tcp, 10 * kGbps), latency + kBytes / (10 * kGbps * 1448 / 1538), 1e-9);
}

} // namespace
} // namespace dtsim
