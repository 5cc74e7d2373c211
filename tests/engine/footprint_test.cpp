// The replay's memory estimate, its refusal, and the parent's watch over each child's resident memory.
#include "sim/engine/child_process.hpp"
#include "sim/engine/footprint.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::engine {
namespace {

topologies::ClusterSpec nodes_of_one_gpu(int nodes) {
  topologies::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 1;
  return c;
}

// `ranks` ranks running one program of `ops` compute ops, in one communicator group.
graph::ExecutionGraph one_program(int ranks, int ops) {
  graph::ExecutionGraph g;
  g.programs.emplace_back();
  for (int i = 0; i < ops; ++i)
    g.programs[0].ops.push_back(graph::Op{"op", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}});
  g.rank_program.assign(ranks, 0);
  g.groups.emplace_back();
  for (int r = 0; r < ranks; ++r)
    g.groups[0].push_back(r);
  return g;
}

TEST(Footprint, CountsRanksTimelinesGroupsAndOps) {
  ReplayOptions options;
  options.iterations = 3;
  const auto f = estimate_footprint(nodes_of_one_gpu(1000), one_program(1000, 20), options);
  EXPECT_EQ(f.ranks, 1000);
  EXPECT_EQ(f.simulated_ranks, 1000);
  EXPECT_DOUBLE_EQ(f.intervals, 1000.0 * 20 * 3);
  EXPECT_DOUBLE_EQ(f.group_slots, 1000);
  EXPECT_DOUBLE_EQ(f.graph_ops, 20);
  // By hand: the process, 1,000 ranks, 60,000 intervals, 1,000 group slots, 20 ops of the one program.
  EXPECT_DOUBLE_EQ(f.bytes, kProcessBytes + 1000 * kBytesPerRank + 60000 * kBytesPerInterval +
                                1000 * kBytesPerGroupSlot + 20 * kBytesPerGraphOp);
}

TEST(Footprint, RanksWithoutAProgramAreNotSimulated) {
  auto g = one_program(8, 10);
  g.programs.emplace_back(); // coarse fidelity: an empty program for the ranks another stands for
  for (int r = 1; r < 8; ++r)
    g.rank_program[r] = 1;
  const auto f = estimate_footprint(nodes_of_one_gpu(8), g, ReplayOptions{});
  EXPECT_EQ(f.simulated_ranks, 1);
  EXPECT_DOUBLE_EQ(f.intervals, 10);
}

TEST(Footprint, PastTheLimitItIsRefusedWithWhatDrivesIt) {
  ReplayOptions options;
  options.iterations = 1;
  const auto f = estimate_footprint(nodes_of_one_gpu(100000), one_program(100000, 10), options);
  options.memory_limit = 0; // no limit: nothing to check
  EXPECT_NO_THROW(check_footprint(f, options));
  options.memory_limit = f.bytes;
  EXPECT_NO_THROW(check_footprint(f, options));
  options.memory_limit = 1e9;
  options.memory_limit_text = "1 GB (a test)";
  try {
    check_footprint(f, options);
    FAIL() << "accepted " << f.bytes << " bytes under a limit of 1 GB";
  } catch (const ResourceError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("over the limit of 1 GB (a test)"), std::string::npos) << text;
    EXPECT_NE(text.find("100000 ranks (cluster.nodes x cluster.gpus_per_node)"), std::string::npos) << text;
    // (1e9 - 40 MiB) / (46 KiB + 10 intervals of 64 B) = 958,056,960 / 47,744 = 20,066.4 ranks.
    EXPECT_NE(text.find("About 20066 ranks"), std::string::npos) << text;
  }
}

TEST(ChildLimits, AChildPastItsMemoryIsStoppedAndSaidSo) {
  // One child touches 1 GiB; the limit is 384 MiB (room for a sanitizer build's own). Another stays small.
  const ChildJob greedy = [] {
    std::vector<char*> blocks;
    for (int i = 0; i < 1024; ++i) {
      blocks.push_back(new char[1 << 20]);
      std::memset(blocks.back(), 1, 1 << 20);
    }
    return std::string("finished");
  };
  const ChildJob modest = [] { return std::string("small"); };
  const auto outcomes = run_in_children({greedy, modest}, 2, {}, {}, {384.0 * (1 << 20), "384 MiB (a test)"});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(outcomes[0].over_memory);
  EXPECT_FALSE(outcomes[0].abnormal);
  EXPECT_NE(outcomes[0].output.find("over the limit of 384 MiB (a test)"), std::string::npos) << outcomes[0].output;
  EXPECT_TRUE(outcomes[1].ok);
  EXPECT_EQ(outcomes[1].output, "small");
}

// A child that dies without reporting (a crash, the kernel's OOM killer) is told apart from a failed job: its
// outcome is abnormal and says which signal.
TEST(ChildLimits, AChildKilledBySignalIsReportedAsSuch) {
  const ChildJob crash = []() -> std::string {
    ::raise(SIGKILL);
    return "not reached";
  };
  const ChildJob fails = []() -> std::string { throw std::runtime_error("the job's own error"); };
  const auto outcomes = run_in_children({crash, fails}, 2);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(outcomes[0].abnormal);
  EXPECT_NE(outcomes[0].output.find("killed (SIGKILL: out of memory or killed by an operator)"), std::string::npos)
      << outcomes[0].output;
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_FALSE(outcomes[1].abnormal);
  EXPECT_EQ(outcomes[1].output, "the job's own error");
}

TEST(ChildLimits, TheDefaultIsThreeQuartersOfThisMachine) {
  EXPECT_GT(physical_memory(), 0);
  EXPECT_DOUBLE_EQ(default_memory_limit(), 0.75 * physical_memory());
  EXPECT_NE(describe_limit(1 << 30, true, 1).find("1.0 GiB (--max-memory)"), std::string::npos);
  EXPECT_NE(describe_limit(1 << 30, false, 4).find("each of 4 simulations"), std::string::npos);
}

} // namespace
} // namespace dtsim::engine
