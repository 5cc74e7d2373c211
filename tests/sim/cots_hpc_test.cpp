// COTS HPC (Coates et al. 2013, "Deep learning with COTS HPC systems"): one model copy split over every GPU of a
// cluster of nodes joined by InfiniBand. An MLP split as Megatron-LM splits one (column, then row) moves its
// activations through tensor-parallel all-reduces, and a tensor-parallel group larger than a node sends them over the
// network; checked against hand calculations, and the shipped scenario against its closed-form parts.
#include "models/zoo.hpp"
#include "sim/engine/engine.hpp"
#include "sim/plan/parallel_layout.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dtsim {
namespace {

using collectives::Operation;

// mlp 1000 -> 4000 -> 1000 at batch 10 on 2 nodes of 2 round GPUs, one tensor-parallel group of all 4.
scenario::Scenario split_mlp() {
  auto s = test::hand_scenario(models::mlp({1000, 4000, 1000}, "split").layers, 2, 2);
  s.training.optimizer = scenario::Optimizer::sgd;
  s.parallelism.tensor = 4;
  s.parallelism.data = 1;
  return s;
}

// Megatron's count for an MLP pair (Shoeybi et al. 2019, section 3): one all-reduce of the pair's output in forward
// (after the row-parallel fc2), one of its input's gradient in backward (after the column-parallel fc1), each of
// batch x 1000 fp32 elements. Each rank runs a quarter of every GEMM.
TEST(TensorParallelMlp, OneAllReduceEachWayOfTheActivations) {
  const auto plan = plan::make_plan(split_mlp());
  std::map<std::string, double> bytes;
  double fc1_flops = 0;
  for (const auto& op : plan.graph.program_of(0).ops) {
    if (const auto* c = std::get_if<graph::Collective>(&op.body); c && op.axis == graph::Axis::tensor) {
      EXPECT_EQ(c->op, Operation::all_reduce) << op.name;
      EXPECT_EQ(plan.graph.groups.at(c->group), (std::vector<int>{0, 1, 2, 3})) << op.name;
      bytes[op.name] = c->bytes;
    }
    if (const auto* c = std::get_if<graph::Compute>(&op.body); c && op.name == "fc1 fwd") fc1_flops = c->flops;
  }
  const double activation = 10.0 * 1000 * 4; // batch x features x fp32
  EXPECT_EQ(bytes, (std::map<std::string, double>{{"fc1 bwd tp all-reduce", activation},
                                                  {"fc2 fwd tp all-reduce", activation}}));
  EXPECT_DOUBLE_EQ(fc1_flops, 2.0 * 10 * 1000 * 4000 / 4);
}

// A tensor-parallel group of 4 ranks on nodes of 2 crosses the network: ranks 0-1 on node 0, 2-3 on node 1, and the
// ring 0 1 2 3 leaves each node once.
TEST(TensorParallelMlp, GroupsLargerThanANodeSpanNodes) {
  const auto s = split_mlp();
  const auto groups = plan::describe_groups(s);
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups.front().kind, "tensor");
  EXPECT_EQ(groups.front().size, 4);
  EXPECT_EQ(groups.front().count, 1);
  EXPECT_TRUE(groups.front().crosses_nodes);
  // One ring step a node leaves through its NIC, which it has to itself: the NIC's 1 GB/s (PCIe is free here).
  EXPECT_DOUBLE_EQ(groups.front().ring_bandwidth, 1e9);
}

// The all-reduces' bytes on each node's NIC link, by hand. The round GPU has no NCCL, so a 40 kB all-reduce over 4
// ranks runs as MPICH would (sim/collectives/choose.cpp: Rabenseifner between 2 KiB and 256 KiB on up to 8 ranks):
// recursive halving sends S/2 to the rank at distance 2, then S/4 at distance 1; recursive doubling returns them in
// reverse. Distance 2 is the other node (0-2, 1-3), so each of a node's 2 ranks sends S/2 + S/2 through the NIC:
// 2 S a node and direction per all-reduce, two of them an iteration, over the warm-up and 3 measured iterations. A
// 4-byte gradient norm, where the planner all-reduces one (recursive doubling), adds at most 2 x 4 bytes an iteration.
TEST(TensorParallelMlp, TheAllReducesCrossEachNodesNic) {
  const auto s = split_mlp();
  const auto plan = plan::make_plan(s);
  const auto replay = engine::replay(s.cluster, plan.graph, replay_options(s));
  const double activation = 10.0 * 1000 * 4;
  const double per_iteration = 2 * (2 * activation);
  std::map<std::string, double> nic;
  for (const auto& l : replay.links)
    if (l.name.find("-nic_") != std::string::npos) nic[l.name] = l.bytes;
  ASSERT_EQ(nic.size(), 4u) << "node0 and node1, up and down";
  for (const auto& [name, bytes] : nic)
    EXPECT_NEAR(bytes, 4 * per_iteration + 4 * 4, 4 * 4 + 1) << name;
}

// The shipped scenario: Coates et al.'s 16 servers of 4 GTX 680 on FDR InfiniBand, the 11.2-billion-parameter
// stand-in split over all 64 GPUs by preset:COTS HPC.
TEST(CotsHpcScenario, SplitsTheModelOverAll64GpusAcrossTheInfiniBand) {
  const auto s = scenario::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/cots-hpc-16-nodes.json");
  EXPECT_EQ(s.training.strategy.preset, "COTS HPC");
  EXPECT_EQ(s.parallelism.tensor, 64);
  EXPECT_EQ(s.parallelism.data, 1);
  EXPECT_EQ(s.gpu.name, "gtx680");
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 54.5e9 / 8);
  const auto groups = plan::describe_groups(s);
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups.front().size, 64);
  EXPECT_TRUE(groups.front().crosses_nodes);

  const auto plan = plan::make_plan(s);
  std::map<std::string, double> bytes;
  for (const auto& op : plan.graph.program_of(0).ops)
    if (const auto* c = std::get_if<graph::Collective>(&op.body); c && op.axis == graph::Axis::tensor)
      bytes[op.name] = c->bytes;
  const double activation = 96.0 * 40'000 * 4; // 96 images of 200 x 200 pixels, fp32: 15.36 MB
  EXPECT_EQ(bytes, (std::map<std::string, double>{{"fc1 bwd tp all-reduce", activation},
                                                  {"fc2 fwd tp all-reduce", activation}}));
  // Each GPU holds 1/64 of each layer's 5,600,140,000 and 5,600,040,000 parameters, rounded up (87,502,188 and
  // 87,500,625), and their gradients, fp32; plain SGD keeps no state: 2 x 4 B x 175,002,813 = 1.40 GB, within the
  // GTX 680's 2 GiB.
  std::map<std::string, double> memory;
  for (const auto& item : plan.memory.items)
    memory[item.name] = item.bytes;
  EXPECT_DOUBLE_EQ(memory["weights"], 4.0 * 175'002'813);
  EXPECT_DOUBLE_EQ(memory["gradients"], 4.0 * 175'002'813);
  EXPECT_DOUBLE_EQ(memory["optimizer states"], 0);
  EXPECT_TRUE(plan.memory.fits());

  // Over 16 nodes of 4 GPUs a 15.36 MB all-reduce runs hierarchically (MPI's two levels; sim/collectives/choose.cpp):
  // a reduce-scatter inside the node, then each local GPU's quarter all-reduced by a ring over the 16 nodes, then an
  // all-gather inside the node. The ring sends 2 x 15/16 x S/4 from each GPU, and the node's 4 GPUs share its one
  // NIC: 1.875 S a node and direction per all-reduce, two an iteration, over the warm-up and the measured iteration.
  // (A 4-byte gradient norm, where the planner all-reduces one, adds a few bytes.)
  const auto replay = engine::replay(s.cluster, plan.graph, replay_options(s));
  double nic_up = 0;
  for (const auto& l : replay.links)
    if (l.name == "node5-nic_UP") nic_up = l.bytes;
  EXPECT_NEAR(nic_up, 2 * 2 * 1.875 * activation, 1000);
}

} // namespace
} // namespace dtsim
