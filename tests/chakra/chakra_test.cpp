// Chakra execution traces in and out (sim/chakra). The traces here are written by the test with the protobuf library,
// as Chakra's own tools write them, and replayed on a network whose times are worked out by hand: one-GPU nodes on
// one switch, 1 GB/s NICs, no latency (CM02 without cross traffic: alpha-beta exactly).
#include "sim/chakra/chakra.hpp"
#include "sim/chakra/et_def.pb.h"

#include "../engine/replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace dtsim {
namespace {

namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

constexpr double kBandwidth = 1e9; // bytes/s

class TraceDir {
public:
  TraceDir()
      : path_(fs::temp_directory_path() /
              ("dtsim-chakra-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++))) {
    fs::create_directories(path_);
  }
  ~TraceDir() { fs::remove_all(path_); }
  std::string prefix() const { return (path_ / "job").string(); }
  const fs::path& path() const { return path_; }

  // Writes job.RANK.et: a GlobalMetadata, then the nodes, each length-delimited.
  void write(int rank, const std::vector<pb::Node>& nodes) const {
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream out(&bytes);
      pb::GlobalMetadata metadata;
      metadata.set_version("0.0.4");
      google::protobuf::util::SerializeDelimitedToZeroCopyStream(metadata, &out);
      for (const auto& n : nodes)
        google::protobuf::util::SerializeDelimitedToZeroCopyStream(n, &out);
    }
    std::ofstream(path_ / ("job." + std::to_string(rank) + ".et"), std::ios::binary) << bytes;
  }

private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  fs::path path_;
};

pb::Node node(std::uint64_t id, pb::NodeType type, std::vector<std::uint64_t> deps = {}) {
  pb::Node n;
  n.set_id(id);
  n.set_name("n" + std::to_string(id));
  n.set_type(type);
  for (auto d : deps)
    n.add_data_deps(d);
  return n;
}
void attr(pb::Node& n, const char* name, std::int64_t value) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}
void attr(pb::Node& n, const char* name, const char* value) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(value);
}
pb::Node compute(std::uint64_t id, std::uint64_t micros, std::vector<std::uint64_t> deps = {}) {
  auto n = node(id, pb::COMP_NODE, std::move(deps));
  n.set_duration_micros(micros);
  return n;
}
pb::Node all_reduce(std::uint64_t id, std::int64_t bytes, std::vector<std::uint64_t> deps = {}) {
  auto n = node(id, pb::COMM_COLL_NODE, std::move(deps));
  attr(n, "comm_type", pb::ALL_REDUCE);
  attr(n, "comm_size", bytes);
  attr(n, "dtsim_algorithm", "ring"); // pinned, so the hand calculation is the ring's
  return n;
}
pb::Node transfer(std::uint64_t id, bool send, int peer, std::int64_t bytes, std::vector<std::uint64_t> deps = {}) {
  auto n = node(id, send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE, std::move(deps));
  attr(n, send ? "comm_dst" : "comm_src", peer);
  attr(n, "comm_size", bytes);
  return n;
}

engine::ReplayResult replay(const graph::ExecutionGraph& g) {
  return engine::replay(testing::uniform_cluster(g.rank_count(), kBandwidth, 0, 0), g, testing::cm02_options());
}

// Each of 2 ranks computes 1 ms, then all-reduces 1 MB: the ring moves 2(n-1)/n x 1 MB = 1 MB through each NIC at
// 1 GB/s, 1 ms. The iteration ends at 2 ms.
TEST(ChakraRead, TwoRanksComputeThenAllReduce) {
  TraceDir dir;
  for (int r = 0; r < 2; ++r)
    dir.write(r, {compute(1, 1000), all_reduce(2, 1'000'000, {1})});
  const auto g = chakra::read_trace(dir.prefix(), 2);
  ASSERT_EQ(g.rank_count(), 2);
  const auto& ops = g.program_of(0).ops;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].stream, graph::Stream::compute);
  EXPECT_DOUBLE_EQ(std::get<graph::Compute>(ops[0].body).seconds, 1e-3);
  EXPECT_EQ(ops[1].stream, graph::Stream::comm);
  EXPECT_EQ(ops[1].deps, std::vector<std::uint32_t>{0});
  const auto& c = std::get<graph::Collective>(ops[1].body);
  EXPECT_EQ(c.op, collectives::Operation::all_reduce);
  EXPECT_DOUBLE_EQ(c.bytes, 1e6);
  EXPECT_EQ(g.groups.at(c.group), (std::vector<int>{0, 1})); // no process group named: every rank
  EXPECT_NEAR(replay(g).simulated_seconds, 2e-3, 1e-9);
}

// A pipeline over 4 ranks: each computes 1 ms on what it received and sends 1 MB on (1 ms at 1 GB/s). The last
// stage ends at 4 x 1 ms of compute + 3 x 1 ms of transfers = 7 ms.
TEST(ChakraRead, FourRankPipelineOfSendsAndReceives) {
  TraceDir dir;
  dir.write(0, {compute(1, 1000), transfer(2, true, 1, 1'000'000, {1})});
  for (int r = 1; r < 3; ++r)
    dir.write(r,
              {transfer(1, false, r - 1, 1'000'000), compute(2, 1000, {1}), transfer(3, true, r + 1, 1'000'000, {2})});
  dir.write(3, {transfer(1, false, 2, 1'000'000), compute(2, 1000, {1})});
  const auto g = chakra::read_trace(dir.prefix(), 4);
  const auto& recv = std::get<graph::SendRecv>(g.program_of(2).ops[0].body);
  EXPECT_FALSE(recv.send);
  EXPECT_EQ(recv.peer, 1);
  EXPECT_EQ(g.program_of(2).ops[0].stream, graph::Stream::p2p);
  const auto r = replay(g);
  EXPECT_NEAR(r.ranks[3].iteration_end[0], 7e-3, 1e-9);
}

// Dependencies across streams: the all-reduce (1 ms) waits for compute A (1 ms); compute B, which does not wait for
// it, runs beside it; D waits for both. Streams overlap: D runs 2 to 3 ms (serialized it would end at 4 ms). The
// nodes are listed out of order (D first): the reader orders them by their dependencies.
TEST(ChakraRead, DependenciesAcrossStreamsOverlapTheStreams) {
  TraceDir dir;
  for (int r = 0; r < 2; ++r)
    dir.write(r, {compute(40, 1000, {30, 20}), compute(10, 1000), all_reduce(30, 1'000'000, {10}), compute(20, 1000)});
  const auto g = chakra::read_trace(dir.prefix(), 2);
  const auto& ops = g.program_of(0).ops;
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops.back().name, "n40");
  EXPECT_EQ(ops.back().deps.size(), 2u);
  const auto r = replay(g);
  EXPECT_NEAR(r.ranks[0].iteration_end[0], 3e-3, 1e-9);
}

// A process group named by pg_name holds the ranks whose files post collectives with that name.
TEST(ChakraRead, ProcessGroupsAreTheRanksThatPostThem) {
  TraceDir dir;
  for (int r = 0; r < 4; ++r) {
    auto c = all_reduce(1, 1000);
    attr(c, "pg_name", r % 2 == 0 ? "even" : "odd");
    dir.write(r, {c});
  }
  const auto g = chakra::read_trace(dir.prefix(), 4);
  EXPECT_EQ(g.groups.at(std::get<graph::Collective>(g.program_of(0).ops[0].body).group), (std::vector<int>{0, 2}));
  EXPECT_EQ(g.groups.at(std::get<graph::Collective>(g.program_of(3).ops[0].body).group), (std::vector<int>{1, 3}));
}

// A node with FLOPs and no duration is priced by the caller (the scenario's GPU).
TEST(ChakraRead, ANodeWithoutDurationIsPricedFromItsFlops) {
  TraceDir dir;
  auto n = node(1, pb::COMP_NODE);
  attr(n, "num_ops", 2'000'000'000);
  dir.write(0, {n});
  chakra::ReadOptions options;
  options.compute_seconds = [](double flops, double) { return flops / 1e12; }; // 1 TFLOP/s
  const auto g = chakra::read_trace(dir.prefix(), 1, options);
  EXPECT_DOUBLE_EQ(std::get<graph::Compute>(g.program_of(0).ops[0].body).seconds, 2e-3);
  EXPECT_THROW((void)chakra::read_trace(dir.prefix(), 1), chakra::TraceError); // no GPU to price it on
}

void expect_refused(const TraceDir& dir, int ranks, const std::string& part) {
  try {
    (void)chakra::read_trace(dir.prefix(), ranks);
    ADD_FAILURE() << "accepted; expected an error with \"" << part << "\"";
  } catch (const chakra::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(ChakraRead, BadTracesAreRefusedSayingWhy) {
  {
    TraceDir dir; // a name that is not UTF-8: protobuf cannot parse the node, and says nothing of its own
    auto named = compute(1, 10);
    named.set_name(std::string("\xff\xfe", 2));
    dir.write(0, {named});
    ::testing::internal::CaptureStderr();
    expect_refused(dir, 1, "node 1 (after node id 0) does not parse");
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  {
    TraceDir dir; // metadata alone in every rank's file: nothing to replay (it would take 0 s)
    for (int r = 0; r < 2; ++r)
      dir.write(r, {});
    expect_refused(dir, 2, "holds no node in any rank's file");
  }
  {
    TraceDir dir;
    for (int r = 0; r < 2; ++r)
      dir.write(r, {compute(1, 1000)});
    expect_refused(dir, 4, "the trace has 2 rank(s)");
  }
  {
    TraceDir dir;
    dir.write(0, {compute(1, 10, {2}), compute(2, 10, {1})});
    expect_refused(dir, 1, "cycle");
  }
  {
    TraceDir dir;
    dir.write(0, {node(1, pb::MEM_LOAD_NODE)});
    expect_refused(dir, 1, "MEM_LOAD_NODE");
  }
  {
    TraceDir dir;
    dir.write(0, {compute(1, 10, {7})});
    expect_refused(dir, 1, "depends on node 7");
  }
  {
    TraceDir dir; // 2^62 bytes: past the 1 PiB every size in dtsim keeps to
    dir.write(0, {all_reduce(1, std::int64_t{1} << 62)});
    expect_refused(dir, 1, "comm_size of 4.612e+18 bytes is past 1 PiB");
  }
  {
    TraceDir dir;
    dir.write(0, {transfer(1, true, 1, 100)});
    dir.write(1, {compute(1, 10)});
    expect_refused(dir, 2, "1 send(s) from rank 0 to rank 1");
  }
  {
    TraceDir dir;
    std::ofstream(dir.path() / "job.0.et", std::ios::binary) << "\x05garbage";
    expect_refused(dir, 1, "job.0.et");
  }
  {
    TraceDir dir;
    auto c = node(1, pb::COMM_COLL_NODE);
    attr(c, "comm_type", pb::GATHER);
    attr(c, "comm_size", 10);
    dir.write(0, {c});
    expect_refused(dir, 1, "GATHER");
  }
}

// dtsim's graph out and back: every op, stream, dependency, group and time as it was.
TEST(ChakraWrite, AGraphReadsBackAsItWas) {
  graph::ExecutionGraph g;
  graph::Collective c;
  c.bytes = 3e6;
  c.group = 0;
  c.algorithm = collectives::Algorithm::double_binary_tree;
  c.reduce_seconds_per_byte = 1.5e-12;
  g.groups.push_back({1, 0});
  for (int r = 0; r < 2; ++r) {
    graph::Program p;
    p.ops.push_back({"fwd", graph::Stream::compute, graph::Compute{1.234567e-6, 5e9, 1e6}, {}});
    p.ops.push_back({"grads", graph::Stream::comm, c, {0}, 2, graph::Axis::data});
    p.ops.push_back({r == 0 ? "send" : "recv", graph::Stream::p2p, graph::SendRecv{1 - r, 4096, r == 0}, {0}});
    g.programs.push_back(p);
    g.rank_program.push_back(r);
  }
  TraceDir dir;
  const auto files = chakra::write_trace(g, dir.path(), "job");
  ASSERT_EQ(files.size(), 2u);
  const auto back = chakra::read_trace(dir.prefix(), 2);
  for (int r = 0; r < 2; ++r) {
    const auto& a = g.program_of(r).ops;
    const auto& b = back.program_of(r).ops;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].name, b[i].name);
      EXPECT_EQ(a[i].stream, b[i].stream);
      EXPECT_EQ(a[i].deps, b[i].deps);
      EXPECT_EQ(a[i].every, b[i].every);
      EXPECT_EQ(a[i].axis, b[i].axis);
    }
    EXPECT_EQ(std::get<graph::Compute>(b[0].body).seconds, 1.234567e-6); // exact, not rounded to microseconds
    const auto& cb = std::get<graph::Collective>(b[1].body);
    EXPECT_EQ(back.groups.at(cb.group), (std::vector<int>{1, 0})); // the ring's order kept
    EXPECT_EQ(cb.algorithm, collectives::Algorithm::double_binary_tree);
    EXPECT_EQ(cb.reduce_seconds_per_byte, 1.5e-12);
    EXPECT_EQ(std::get<graph::SendRecv>(b[2].body).send, r == 0);
  }
}

TEST(ChakraWrite, OpsChakraCannotHoldAreRefused) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"gossip", graph::Stream::comm, graph::Push{{0}, 10, 0}, {}}}});
  g.rank_program = {0};
  TraceDir dir;
  EXPECT_THROW((void)chakra::write_trace(g, dir.path(), "job"), chakra::TraceError);
}

} // namespace
} // namespace dtsim
