// Table 1 of Kako et al. 2021 as presets: every system is there, its row is the table's, and the strategy dtsim runs
// for it keeps the table's scheduling.
#include "sim/strategies/strategy.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dtsim::strategies {
namespace {

const std::vector<std::string> kTable1{
    "BigDL",        "CaffeOnSpark", "COTS HPC", "D-PSGD",     "DistBelief",       "EASGD",
    "FireCaffe",    "GoSGD",        "MPCA-SGD", "MXNet",      "Parameter Server", "Petuum",
    "Project Adam", "PyTorch",      "SparkNet", "TensorFlow", "TreeEASGD"};

const Preset& preset(const std::string& name) {
  const Preset* p = find_preset(name);
  EXPECT_NE(p, nullptr) << name;
  static const Preset none;
  return p != nullptr ? *p : none;
}

bool is_synchronous(const StrategySpec& s) {
  switch (s.kind) {
  case Kind::allreduce:
  case Kind::dpsgd:
  case Kind::local_sgd:
    return true;
  case Kind::parameter_server:
  case Kind::easgd:
    return s.schedule == Schedule::synchronous;
  default:
    return false;
  }
}

bool is_fully_asynchronous(const StrategySpec& s) {
  if (s.kind == Kind::adpsgd || s.kind == Kind::gossip) return true;
  return (s.kind == Kind::parameter_server || s.kind == Kind::easgd) && s.schedule == Schedule::asynchronous;
}

bool is_bounded(const StrategySpec& s) {
  return (s.kind == Kind::parameter_server || s.kind == Kind::easgd) && s.schedule == Schedule::bounded &&
         s.staleness > 0;
}

TEST(Presets, EveryTable1SystemAndHorovodAndBytePS) {
  for (const auto& name : kTable1)
    EXPECT_NE(find_preset(name), nullptr) << name;
  EXPECT_NE(find_preset("Horovod"), nullptr);
  EXPECT_NE(find_preset("BytePS"), nullptr);
  EXPECT_EQ(presets().size(), kTable1.size() + 2);
  std::set<std::string> names;
  for (const auto& p : presets())
    EXPECT_TRUE(names.insert(p.name).second) << "listed twice: " << p.name;
}

TEST(Presets, EveryRowIsFilledIn) {
  for (const auto& p : presets()) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.citation.empty());
    EXPECT_FALSE(p.parallelism.empty());
    EXPECT_TRUE(p.optimization == "central" || p.optimization == "decentral") << p.optimization;
    EXPECT_FALSE(p.scheduling.empty());
    EXPECT_FALSE(p.exchange.empty());
    EXPECT_FALSE(p.topology.empty());
    EXPECT_FALSE(p.note.empty());
    EXPECT_EQ(p.strategy.preset, p.name);
  }
}

TEST(Presets, FindForgivesSpelling) {
  EXPECT_EQ(find_preset("parameter-server"), find_preset("Parameter Server"));
  EXPECT_EQ(find_preset("pytorch")->name, "PyTorch");
  EXPECT_EQ(find_preset("PETUUM")->name, "Petuum");
  EXPECT_EQ(find_preset("dpsgd")->name, "D-PSGD");
  EXPECT_EQ(find_preset("cots-hpc")->name, "COTS HPC");
  EXPECT_EQ(find_preset("project_adam")->name, "Project Adam");
  EXPECT_EQ(find_preset("Caffe"), nullptr);
  EXPECT_EQ(find_preset(""), nullptr);
}

TEST(Presets, MappingKeepsTheTablesScheduling) {
  for (const auto& p : presets()) {
    SCOPED_TRACE(p.name);
    const auto& s = p.strategy;
    if (p.scheduling == "synchronous")
      EXPECT_TRUE(is_synchronous(s));
    else if (p.scheduling == "asynchronous")
      EXPECT_TRUE(is_fully_asynchronous(s));
    else if (p.scheduling == "bounded asynchronous")
      EXPECT_TRUE(is_bounded(s));
    else if (p.scheduling == "soft-bounded asynchronous") // GoSGD's gossip, MPCA-SGD's extrapolated staleness
      EXPECT_TRUE(is_bounded(s) || is_fully_asynchronous(s));
    else
      ADD_FAILURE() << "unexpected scheduling " << p.scheduling;
  }
}

TEST(Presets, CentralSystemsUseServersOrAReductionToOne) {
  // "central" in the table: a parameter server, or (FireCaffe, PyTorch) a reduction the table files as one.
  for (const auto& name : {"BigDL", "CaffeOnSpark", "DistBelief", "MXNet", "Parameter Server", "Petuum", "Project Adam",
                           "TensorFlow", "BytePS"})
    EXPECT_EQ(preset(name).strategy.kind, Kind::parameter_server) << name;
  // The table's k = n: a server on every node.
  for (const auto& name : {"BigDL", "CaffeOnSpark", "MXNet", "TensorFlow", "BytePS"}) {
    EXPECT_EQ(preset(name).strategy.servers.placement, ServerPlacement::colocated) << name;
    EXPECT_EQ(preset(name).strategy.servers.count, 0) << name;
  }
}

TEST(Presets, TheRowsAsTheTableGivesThem) {
  const auto& petuum = preset("Petuum");
  EXPECT_EQ(petuum.citation, "Xing et al., 2015");
  EXPECT_EQ(petuum.parallelism, "MP and DP");
  EXPECT_EQ(petuum.scheduling, "bounded asynchronous");
  EXPECT_EQ(petuum.exchange, "ad hoc with eager scatter");
  EXPECT_EQ(petuum.topology, "DPS");
  EXPECT_EQ(preset("D-PSGD").exchange, "2:1 reduce");
  EXPECT_EQ(preset("D-PSGD").topology, "closed ring");
  EXPECT_EQ(preset("FireCaffe").exchange, "binomial tree");
  EXPECT_EQ(preset("FireCaffe").topology, "SPS");
  EXPECT_EQ(preset("GoSGD").topology, "P2P mesh");
  EXPECT_EQ(preset("EASGD").topology, "single server");
  EXPECT_EQ(preset("TreeEASGD").topology, "tree");
  EXPECT_EQ(preset("BigDL").topology, "DPS (always k = n)");
}

TEST(Presets, StrategiesDtsimChose) {
  EXPECT_EQ(preset("D-PSGD").strategy.kind, Kind::dpsgd);
  EXPECT_EQ(preset("D-PSGD").strategy.graph, PeerGraph::ring);

  const auto& distbelief = preset("DistBelief").strategy;
  EXPECT_EQ(distbelief.schedule, Schedule::asynchronous);
  EXPECT_EQ(distbelief.servers.count, 2);
  EXPECT_EQ(distbelief.servers.placement, ServerPlacement::dedicated);

  const auto& easgd = preset("EASGD").strategy;
  EXPECT_EQ(easgd.kind, Kind::easgd);
  EXPECT_EQ(easgd.period, 4);
  EXPECT_EQ(easgd.servers.count, 1);

  EXPECT_EQ(preset("FireCaffe").strategy.kind, Kind::allreduce);
  EXPECT_EQ(preset("FireCaffe").strategy.algorithm, collectives::Algorithm::binomial_tree);
  EXPECT_EQ(preset("Horovod").strategy.algorithm, collectives::Algorithm::ring);
  EXPECT_FALSE(preset("PyTorch").strategy.algorithm); // as NCCL would choose

  EXPECT_EQ(preset("GoSGD").strategy.kind, Kind::gossip);
  EXPECT_DOUBLE_EQ(preset("GoSGD").strategy.probability, 0.1);

  for (const auto& name : {"MPCA-SGD", "MXNet", "Parameter Server", "Petuum", "TensorFlow", "TreeEASGD"})
    EXPECT_EQ(preset(name).strategy.staleness, 3) << name;
  EXPECT_EQ(preset("MPCA-SGD").strategy.servers.count, 1);
  EXPECT_EQ(preset("Petuum").strategy.servers.count, 2);

  const auto& sparknet = preset("SparkNet").strategy;
  EXPECT_EQ(sparknet.kind, Kind::parameter_server);
  EXPECT_EQ(sparknet.schedule, Schedule::synchronous);
  EXPECT_EQ(sparknet.period, 8);

  const auto& tree = preset("TreeEASGD").strategy;
  EXPECT_EQ(tree.kind, Kind::easgd);
  EXPECT_EQ(tree.schedule, Schedule::bounded);
  EXPECT_TRUE(tree.servers.hierarchical);

  EXPECT_TRUE(preset("BytePS").strategy.servers.hierarchical);
  EXPECT_EQ(preset("BytePS").strategy.schedule, Schedule::synchronous);
}

// Coates et al. 2013 train one model copy split over every GPU, synchronously: plain all-reduce (which, with one
// copy, has no gradient to exchange), and the scenario's tensor parallelism over the cluster.
TEST(Presets, CotsHpcSplitsOneModelOverTheCluster) {
  const auto& cots = preset("COTS HPC");
  EXPECT_EQ(cots.parallelism, "MP");
  EXPECT_EQ(cots.scheduling, "synchronous");
  EXPECT_TRUE(cots.splits_model);
  EXPECT_EQ(cots.strategy.kind, Kind::allreduce);
  EXPECT_EQ(cots.strategy.accumulation, 1);
  EXPECT_FALSE(cots.strategy.algorithm);
  EXPECT_NE(cots.note.find("tensor"), std::string::npos) << cots.note;
  // No other system splits the model: the table's "MP and DP" systems run here as data parallelism.
  for (const auto& p : presets())
    if (p.name != "COTS HPC") {
      EXPECT_FALSE(p.splits_model) << p.name;
    }
}

TEST(Presets, EveryStrategyRoundTripsThroughItsName) {
  for (const auto& p : presets()) {
    EXPECT_EQ(strategy_name(p.strategy), "preset:" + p.name);
    EXPECT_EQ(parse_strategy_name(strategy_name(p.strategy)), p.strategy);
  }
}

} // namespace
} // namespace dtsim::strategies
