// Short strategy names ("ssp:3", "preset:Petuum"): what each sets, their defaults, the way back, and the errors.
#include "sim/strategies/strategy.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace dtsim::strategies {
namespace {

std::string error_of(std::string_view name) {
  try {
    parse_strategy_name(name);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for \"" << name << "\"";
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(StrategyNames, AllreduceIsTheDefaultSpec) {
  EXPECT_EQ(parse_strategy_name("allreduce"), StrategySpec{});
  EXPECT_EQ(StrategySpec{}.kind, Kind::allreduce);
}

TEST(StrategyNames, ParameterServerSchedules) {
  const auto sync = parse_strategy_name("ps-sync");
  EXPECT_EQ(sync.kind, Kind::parameter_server);
  EXPECT_EQ(sync.schedule, Schedule::synchronous);
  EXPECT_EQ(sync.servers.count, 1);
  EXPECT_EQ(sync.servers.placement, ServerPlacement::dedicated);
  const auto async = parse_strategy_name("ps-async");
  EXPECT_EQ(async.kind, Kind::parameter_server);
  EXPECT_EQ(async.schedule, Schedule::asynchronous);
  const auto ssp = parse_strategy_name("ssp");
  EXPECT_EQ(ssp.kind, Kind::parameter_server);
  EXPECT_EQ(ssp.schedule, Schedule::bounded);
  EXPECT_EQ(ssp.staleness, 3); // the default bound
  EXPECT_EQ(parse_strategy_name("ssp:7").staleness, 7);
  EXPECT_EQ(parse_strategy_name("ssp:0").staleness, 0);
  EXPECT_EQ(parse_strategy_name("ssp:1000").staleness, 1000);
}

TEST(StrategyNames, DecentralizedKinds) {
  const auto dpsgd = parse_strategy_name("dpsgd");
  EXPECT_EQ(dpsgd.kind, Kind::dpsgd);
  EXPECT_EQ(dpsgd.graph, PeerGraph::ring);
  EXPECT_EQ(parse_strategy_name("adpsgd").kind, Kind::adpsgd);
  const auto gossip = parse_strategy_name("gossip");
  EXPECT_EQ(gossip.kind, Kind::gossip);
  EXPECT_DOUBLE_EQ(gossip.probability, 0.1);
  EXPECT_DOUBLE_EQ(parse_strategy_name("gossip:0.25").probability, 0.25);
  EXPECT_DOUBLE_EQ(parse_strategy_name("gossip:1").probability, 1);
}

TEST(StrategyNames, PeriodicKinds) {
  const auto easgd = parse_strategy_name("easgd");
  EXPECT_EQ(easgd.kind, Kind::easgd);
  EXPECT_EQ(easgd.schedule, Schedule::asynchronous);
  EXPECT_EQ(easgd.period, 4);
  EXPECT_EQ(easgd.servers.count, 1);
  EXPECT_EQ(easgd.servers.placement, ServerPlacement::dedicated);
  EXPECT_EQ(parse_strategy_name("easgd:16").period, 16);
  const auto local = parse_strategy_name("local-sgd");
  EXPECT_EQ(local.kind, Kind::local_sgd);
  EXPECT_EQ(local.period, 8);
  EXPECT_EQ(parse_strategy_name("local-sgd:32").period, 32);
}

TEST(StrategyNames, PresetsByName) {
  const auto petuum = parse_strategy_name("preset:Petuum");
  EXPECT_EQ(petuum, find_preset("Petuum")->strategy);
  EXPECT_EQ(petuum.preset, "Petuum");
  EXPECT_EQ(parse_strategy_name("preset:parameter-server").preset, "Parameter Server"); // spelling forgiven
  EXPECT_EQ(parse_strategy_name("preset:pytorch").preset, "PyTorch");
  // COTS HPC is synchronous all-reduce by name; the scenario adds its tensor parallelism.
  const auto cots = parse_strategy_name("preset:cots-hpc");
  EXPECT_EQ(cots.kind, Kind::allreduce);
  EXPECT_EQ(cots.preset, "COTS HPC");
}

TEST(StrategyNames, BaseNamesIgnoreCase) {
  EXPECT_EQ(parse_strategy_name("SSP:5"), parse_strategy_name("ssp:5"));
  EXPECT_EQ(parse_strategy_name("AllReduce"), StrategySpec{});
}

TEST(StrategyNames, RoundTrip) {
  for (const std::string name : {"allreduce", "ps-sync", "ps-async", "ssp:3", "ssp:0", "ssp:12", "dpsgd", "adpsgd",
                                 "gossip:0.1", "gossip:0.37", "gossip:1", "easgd:4", "easgd:9", "local-sgd:8",
                                 "local-sgd:1", "preset:Petuum", "preset:Parameter Server", "preset:FireCaffe"}) {
    SCOPED_TRACE(name);
    const auto spec = parse_strategy_name(name);
    EXPECT_EQ(strategy_name(spec), name);
    EXPECT_EQ(parse_strategy_name(strategy_name(spec)), spec);
  }
  // Defaults are written out.
  EXPECT_EQ(strategy_name(parse_strategy_name("ssp")), "ssp:3");
  EXPECT_EQ(strategy_name(parse_strategy_name("gossip")), "gossip:0.1");
  EXPECT_EQ(strategy_name(parse_strategy_name("easgd")), "easgd:4");
  EXPECT_EQ(strategy_name(parse_strategy_name("local-sgd")), "local-sgd:8");
  EXPECT_EQ(strategy_name(parse_strategy_name("preset:pytorch")), "preset:PyTorch");
}

TEST(StrategyNames, EveryKindRoundTripsThroughItsDefault) {
  for (const auto& name : kind_names()) {
    SCOPED_TRACE(name);
    const auto spec = default_strategy(*parse_kind(name));
    EXPECT_EQ(to_string(spec.kind), name);
    EXPECT_EQ(parse_strategy_name(strategy_name(spec)), spec);
  }
}

TEST(StrategyNames, Errors) {
  const auto unknown = error_of("parameter_server");
  EXPECT_TRUE(contains(unknown, "unknown strategy \"parameter_server\"")) << unknown;
  // Every accepted form is listed.
  for (const auto& form : strategy_forms())
    EXPECT_TRUE(contains(unknown, form)) << unknown;
  EXPECT_TRUE(contains(error_of("dpsgd:3"), "takes no parameter")) << error_of("dpsgd:3");
  EXPECT_TRUE(contains(error_of("allreduce:"), "takes no parameter"));
  EXPECT_TRUE(contains(error_of("ssp:-1"), "integer from 0 to 1000")) << error_of("ssp:-1");
  EXPECT_TRUE(contains(error_of("ssp:1001"), "integer from 0 to 1000"));
  EXPECT_TRUE(contains(error_of("ssp:3.5"), "integer from 0 to 1000"));
  EXPECT_TRUE(contains(error_of("ssp:"), "integer from 0 to 1000"));
  EXPECT_TRUE(contains(error_of("gossip:0"), "(0, 1]")) << error_of("gossip:0");
  EXPECT_TRUE(contains(error_of("gossip:1.5"), "(0, 1]"));
  EXPECT_TRUE(contains(error_of("gossip:nan"), "(0, 1]"));
  EXPECT_TRUE(contains(error_of("gossip:x"), "(0, 1]"));
  EXPECT_TRUE(contains(error_of("easgd:0"), "integer from 1 to 1000000"));
  EXPECT_TRUE(contains(error_of("local-sgd:2000000"), "integer from 1 to 1000000"));
  EXPECT_TRUE(contains(error_of("preset"), "preset:Petuum"));
  EXPECT_TRUE(contains(error_of("preset:"), "preset:Petuum"));
  const auto no_such = error_of("preset:Caffe");
  EXPECT_TRUE(contains(no_such, "unknown preset \"Caffe\"")) << no_such;
  EXPECT_TRUE(contains(no_such, "FireCaffe")) << no_such; // the presets are listed
  EXPECT_TRUE(contains(error_of(""), "unknown strategy"));
}

TEST(StrategyNames, EnumNames) {
  EXPECT_EQ(to_string(Kind::parameter_server), "parameter-server");
  EXPECT_EQ(to_string(Kind::local_sgd), "local-sgd");
  EXPECT_EQ(to_string(Schedule::synchronous), "sync");
  EXPECT_EQ(to_string(Schedule::asynchronous), "async");
  EXPECT_EQ(to_string(Schedule::bounded), "bounded");
  EXPECT_EQ(to_string(ServerPlacement::dedicated), "dedicated");
  EXPECT_EQ(to_string(ServerPlacement::colocated), "colocated");
  EXPECT_EQ(to_string(PeerGraph::exponential), "exponential");
  EXPECT_EQ(to_string(CompressionKind::powersgd), "powersgd");
  EXPECT_EQ(to_string(CompressionKind::randomk), "randomk");
  EXPECT_EQ(to_string(Jitter::lognormal), "lognormal");
  EXPECT_EQ(to_string(Jitter::exponential), "exponential");
}

TEST(StrategyNames, ParsersInvertToString) {
  for (const auto& n : kind_names())
    EXPECT_EQ(to_string(*parse_kind(n)), n);
  for (const auto& n : schedule_names())
    EXPECT_EQ(to_string(*parse_schedule(n)), n);
  for (const auto& n : placement_names())
    EXPECT_EQ(to_string(*parse_placement(n)), n);
  for (const auto& n : peer_graph_names())
    EXPECT_EQ(to_string(*parse_peer_graph(n)), n);
  for (const auto& n : compression_kind_names())
    EXPECT_EQ(to_string(*parse_compression_kind(n)), n);
  for (const auto& n : jitter_names())
    EXPECT_EQ(to_string(*parse_jitter(n)), n);
  EXPECT_EQ(kind_names().size(), 7u);
  EXPECT_EQ(compression_kind_names().size(), 6u);
  EXPECT_FALSE(parse_kind("parameter_server"));
  EXPECT_FALSE(parse_schedule("synchronous"));
  EXPECT_FALSE(parse_jitter("normal"));
}

TEST(StrategyNames, WorkersLeaveOutDedicatedServerNodes) {
  EXPECT_EQ(worker_count(StrategySpec{}, 4, 8), 32); // all-reduce: every GPU trains
  auto ps = parse_strategy_name("ps-sync");
  EXPECT_TRUE(uses_servers(ps));
  EXPECT_EQ(dedicated_server_nodes(ps), 1);
  EXPECT_EQ(worker_count(ps, 4, 8), 24);
  ps.servers = {.count = 0, .placement = ServerPlacement::colocated, .hierarchical = false};
  EXPECT_EQ(dedicated_server_nodes(ps), 0);
  EXPECT_EQ(worker_count(ps, 4, 8), 32);
  EXPECT_EQ(worker_count(parse_strategy_name("easgd"), 4, 2), 6);
  // Kinds without servers ignore the layout they carry by default.
  EXPECT_FALSE(uses_servers(parse_strategy_name("gossip")));
  EXPECT_EQ(dedicated_server_nodes(parse_strategy_name("local-sgd")), 0);
}

} // namespace
} // namespace dtsim::strategies
