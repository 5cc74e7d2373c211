// `dtsim collective` as a user runs it: nccl-tests' bus bandwidth of a large ring all-reduce is the bottleneck
// link's bandwidth (nccl-tests doc/PERFORMANCE.md), and bad options are refused.
#include "cli_util.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace dtsim::testing {
namespace {

// 8 single-V100 nodes with 100 Gb/s NICs (12.5 GB/s); PCIe Gen3 x16 carries 15.75 GB/s on the datasheet but 12.0 GB/s
// of data (the profile's pcie_efficiency 0.762, NCCL's count of a Gen3 x16 link), so PCIe is the narrower.
const std::string kCluster = R"({
  "version": 1,
  "model": {"preset": "mlp-small", "batch_per_gpu": 1},
  "cluster": {"nodes": 8, "gpu": "v100", "nic": {"bandwidth": "100Gbps", "latency": "5us"}}
})";

TEST(CollectiveCommand, RingBusBandwidthIsThePcieDataRate) {
  TempDir dir;
  const auto file = dir.write("cluster.json", kCluster);
  const auto csv = dir.path() / "c.csv";
  const auto inv =
      run_dtsim("collective '" + file.string() + "' --algo ring --sizes 1GiB --csv '" + csv.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("busbw"), std::string::npos) << inv.out;
  const auto r = collective_row(csv);
  EXPECT_EQ(r.header, "size_bytes,algorithm,protocol,channels,time_seconds,algbw_bytes_per_second,busbw_bytes_per_"
                      "second,error");
  // size, algorithm, time, algbw, busbw: 2(n-1)/n S / T -> B once the 14 latency terms are negligible (< 0.2%).
  ASSERT_TRUE(r.parsed) << r.text;
  EXPECT_EQ(r.protocol, "Simple"); // a gigabyte: NCCL's bandwidth protocol
  EXPECT_EQ(r.algorithm, "ring");
  EXPECT_DOUBLE_EQ(r.size, 1073741824.0);
  EXPECT_NEAR(r.algbw, r.size / r.time, 1e-6 * r.algbw);
  EXPECT_NEAR(r.busbw, r.algbw * 2 * 7 / 8, 1e-6 * r.busbw);
  EXPECT_NEAR(r.busbw, 15.75e9 * 0.762, 0.01 * 12e9);
}

// Over TCP NCCL opens a connection per channel, each of NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD sockets: two
// single-V100 nodes on a 32 Gb/s network (4 GB/s: one ring channel at 4 GB/s, run twice) with one socket of at most
// 5 Gb/s a connection move 2 x 5 Gb/s. A two-rank all-reduce sends S/2 each way in each of its two steps, so its bus
// bandwidth (= algbw at n = 2) is the connections' 1.25 GB/s, under the NIC's 3.76 GB/s of data.
TEST(CollectiveCommand, EachNcclChannelHasATcpConnectionOfItsOwn) {
  TempDir dir;
  const auto csv = dir.path() / "c.csv";
  const auto inv =
      run_dtsim("collective --instance gcp.n1-standard-4-v100 --nodes 2 --set cluster.nic.bandwidth=32Gbps "
                "--set cluster.nic.streams=1 --set cluster.nic.stream_bandwidth=5Gbps --sizes 256MiB "
                "--jobs 1 --csv '" +
                    csv.string() + "'",
                dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto r = collective_row(csv);
  ASSERT_TRUE(r.parsed) << r.text;
  EXPECT_EQ(r.channels, 2);
  EXPECT_NEAR(r.busbw, 2 * 5e9 / 8, 0.005 * 1.25e9);
}

// A ring over hundreds of ranks on Ethernet pays NCCL's per-step latencies (tuning.cc), hop by hop: 128 nodes of 4 PCIe
// V100 on 25 GbE, NCCL 2.3.7 (rings only), 8 B, so ring LL. NCCL's model: base 6.6 us + 2 (512 - 128) = 768 steps
// inside the nodes at max(PCI's 1.0 us, the network overhead's 1.0) + 2 (128 - 1) = 254 network steps at 2.7 us =
// 1460.4 us, which the replay's RDMA path (PCIe, NIC, switch, NIC, PCIe: 2.7 us) meets. Over TCP each network step
// pays the socket path instead, 0.5 + 5 + 1 + 5 + 0.5 = 12 us: 6.6 + 768 + 254 x 12 = 3822.6 us.
TEST(CollectiveCommand, ARingOverHundredsOfRanksPaysEveryStepsLatency) {
  TempDir dir;
  const auto file = dir.write("cluster.json", R"({
    "version": 1,
    "model": {"preset": "mlp-small", "batch_per_gpu": 1},
    "cluster": {"nodes": 128, "gpus_per_node": 4, "gpu": "v100", "intra_node": {"fabric": "pcie"},
                "nic": {"bandwidth": "25Gbps"}},
    "training": {"nccl": "2.3.7"}
  })");
  for (const auto& [transport, expected] : {std::pair{"rdma", 1460.4e-6}, std::pair{"tcp", 3822.6e-6}}) {
    const auto csv = dir.path() / (std::string(transport) + ".csv");
    const auto inv = run_dtsim("collective '" + file.string() + "' --set cluster.nic.transport=" + transport +
                                   " --sizes 8B --jobs 1 --csv '" + csv.string() + "'",
                               dir);
    ASSERT_EQ(inv.status, 0) << inv.err;
    const auto r = collective_row(csv);
    ASSERT_TRUE(r.parsed) << r.text;
    EXPECT_EQ(r.algorithm, "ring") << transport;
    EXPECT_EQ(r.protocol, "LL") << transport;
    EXPECT_NEAR(r.time, expected, 0.01 * expected) << transport;
  }
}

TEST(CollectiveCommand, BadOptionsAreRefusedWithStatusTwo) {
  TempDir dir;
  const auto file = dir.write("cluster.json", kCluster);
  auto inv = run_dtsim("collective '" + file.string() + "' --op all-reduse", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--op"), std::string::npos) << inv.err;
  inv = run_dtsim("collective '" + file.string() + "' --op broadcast --algo pairwise --sizes 1MiB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("has no 'pairwise' algorithm"), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("binomial-tree"), std::string::npos) << inv.err;
  inv = run_dtsim("collective '" + file.string() + "' --sizes 1MiB..1KiB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--sizes"), std::string::npos) << inv.err;
}

// nccl-tests' way of giving sizes (-b 1M -e 4M -f 2: 1, 2 and 4 MiB, K/M/G binary as its parsesize reads them), its
// out-of-place and in-place columns, and its footer: the mean bus bandwidth over every row of both columns.
TEST(CollectiveCommand, TakesNcclTestsSizesAndPrintsItsAverageBusBandwidth) {
  TempDir dir;
  const auto file = dir.write("cluster.json", kCluster);
  const auto csv = dir.path() / "c.csv";
  const auto inv =
      run_dtsim("collective '" + file.string() + "' --algo ring -b 1M -e 4M -f 2 --csv '" + csv.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  std::istringstream lines(read_file(csv));
  std::string line;
  std::getline(lines, line); // header
  std::vector<double> sizes, busbw;
  while (std::getline(lines, line)) {
    double size = 0, time = 0, alg = 0, bus = 0;
    char algorithm[32] = {}, protocol[16] = {};
    int channels = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%31[^,],%15[^,],%d,%lf,%lf,%lf", &size, algorithm, protocol, &channels,
                          &time, &alg, &bus),
              7)
        << line;
    sizes.push_back(size);
    busbw.push_back(bus);
  }
  EXPECT_EQ(sizes, (std::vector<double>{1048576, 2097152, 4194304}));
  EXPECT_NE(inv.out.find("out-of-place"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("in-place"), std::string::npos) << inv.out;
  const auto footer = inv.out.find("# Avg bus bandwidth    : ");
  ASSERT_NE(footer, std::string::npos) << inv.out;
  const double printed = std::stod(inv.out.substr(footer + 25));
  const double mean = (busbw[0] + busbw[1] + busbw[2]) / 3 / 1e9; // GB/s; each row's two columns are equal
  EXPECT_NEAR(printed, mean, 1e-5 * mean) << inv.out;
}

TEST(CollectiveCommand, BadNcclTestsSizesAreRefusedNamingTheOption) {
  TempDir dir;
  const auto file = dir.write("cluster.json", kCluster);
  const struct {
    std::string args, option;
  } cases[] = {{"-b 1M --sizes 1MiB", "--sizes"},
               {"-e 4M", "-b"},
               {"-b 1M -f 1", "-f"},
               {"-b 1M -f two", "-f"},
               {"-b 3X", "-b"},
               {"-b 4M -e 1M", "-e"},
               {"-b 0", "-b"},
               {"-b 1M -e 2P", "-e"}};
  for (const auto& c : cases) {
    const auto inv = run_dtsim("collective '" + file.string() + "' " + c.args, dir);
    EXPECT_EQ(inv.status, 2) << c.args << ": " << inv.err;
    EXPECT_NE(inv.err.find(c.option), std::string::npos) << c.args << ": " << inv.err;
  }
}

} // namespace
} // namespace dtsim::testing
