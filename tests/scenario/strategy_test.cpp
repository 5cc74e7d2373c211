// training.strategy, training.compression and "stragglers": each JSON form, the canonical form read back, and
// every error's pointer.
#include "scenario_test_util.hpp"

#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

namespace st = strategies;
using test::error_of;
using test::json;
using test::parse;
using test::patched;

// 4 nodes of 2 GPUs: room for dedicated server nodes.
json on_four_nodes(const json& training, const json& stragglers = nullptr) {
  json doc = patched({{"cluster", {{"nodes", 4}, {"gpus_per_node", 2}}}, {"training", training}});
  if (!stragglers.is_null()) doc["stragglers"] = stragglers;
  return doc;
}

st::StrategySpec strategy_of(const json& strategy) {
  return parse(on_four_nodes({{"strategy", strategy}})).training.strategy;
}

// The canonical form reads back to the same scenario, and writes the same canonical form again.
void expect_round_trip(const Scenario& s) {
  const json canonical = to_json(s);
  const Scenario again = parse_scenario(canonical.dump(), "again.json");
  EXPECT_EQ(again.training.strategy, s.training.strategy);
  EXPECT_EQ(again.training.compression, s.training.compression);
  EXPECT_EQ(again.stragglers.any(), s.stragglers.any());
  if (s.stragglers.any()) {
    EXPECT_EQ(again.stragglers, s.stragglers);
  }
  EXPECT_EQ(to_json(again), canonical);
}

TEST(Strategy, AbsentIsAllreduce) {
  const Scenario s = parse(test::minimal());
  EXPECT_EQ(s.training.strategy, st::StrategySpec{});
  EXPECT_EQ(s.training.compression.kind, st::CompressionKind::none);
}

TEST(Strategy, ShortNames) {
  const auto ssp = strategy_of("ssp:5");
  EXPECT_EQ(ssp.kind, st::Kind::parameter_server);
  EXPECT_EQ(ssp.schedule, st::Schedule::bounded);
  EXPECT_EQ(ssp.staleness, 5);
  EXPECT_EQ(strategy_of("gossip:0.5").probability, 0.5);
  EXPECT_EQ(strategy_of("local-sgd").period, 8);
  const auto petuum = strategy_of("preset:Petuum");
  EXPECT_EQ(petuum, st::find_preset("Petuum")->strategy);
  EXPECT_EQ(petuum.preset, "Petuum");
  EXPECT_EQ(strategy_of("preset:pytorch").preset, "PyTorch");
}

TEST(Strategy, ObjectFieldsOverrideTheName) {
  const auto s = strategy_of({{"name", "ssp:5"},
                              {"staleness", 2},
                              {"servers", {{"count", 2}, {"hierarchical", true}}},
                              {"sparse_embeddings", true},
                              {"backup_workers", 1},
                              {"accumulation", 4},
                              {"period", 2}});
  EXPECT_EQ(s.kind, st::Kind::parameter_server);
  EXPECT_EQ(s.schedule, st::Schedule::bounded);
  EXPECT_EQ(s.staleness, 2);
  EXPECT_EQ(s.servers.count, 2);
  EXPECT_EQ(s.servers.placement, st::ServerPlacement::dedicated);
  EXPECT_TRUE(s.servers.hierarchical);
  EXPECT_TRUE(s.sparse_embeddings);
  EXPECT_EQ(s.backup_workers, 1);
  EXPECT_EQ(s.accumulation, 4);
  EXPECT_EQ(s.period, 2);
  EXPECT_TRUE(s.preset.empty());
}

TEST(Strategy, ObjectWithoutNameStartsFromAllreduce) {
  EXPECT_EQ(strategy_of(json::object()), st::StrategySpec{});
  const auto acc = strategy_of({{"accumulation", 8}});
  EXPECT_EQ(acc.kind, st::Kind::allreduce);
  EXPECT_EQ(acc.accumulation, 8);
  EXPECT_EQ(strategy_of({{"algorithm", "binomial-tree"}}).algorithm, collectives::Algorithm::binomial_tree);
  EXPECT_FALSE(strategy_of({{"name", "preset:FireCaffe"}, {"algorithm", "auto"}}).algorithm);
}

TEST(Strategy, AnotherKindTakesItsOwnDefaults) {
  // The kind's short name without a parameter: easgd's tau 4 and its server, not the name's fields.
  const auto easgd = strategy_of({{"name", "ssp:9"}, {"kind", "easgd"}});
  EXPECT_EQ(easgd, st::parse_strategy_name("easgd"));
  const auto ps = strategy_of({{"kind", "parameter-server"}});
  EXPECT_EQ(ps, st::parse_strategy_name("ps-sync"));
  // The same kind as the name's keeps the name's fields.
  EXPECT_EQ(strategy_of({{"name", "ssp:9"}, {"kind", "parameter-server"}}).staleness, 9);
  const auto dpsgd = strategy_of({{"kind", "dpsgd"}, {"graph", "exponential"}});
  EXPECT_EQ(dpsgd.kind, st::Kind::dpsgd);
  EXPECT_EQ(dpsgd.graph, st::PeerGraph::exponential);
}

TEST(Strategy, BoundedScheduleDefaultsToStalenessThree) {
  const auto s = strategy_of({{"name", "ps-async"}, {"schedule", "bounded"}});
  EXPECT_EQ(s.schedule, st::Schedule::bounded);
  EXPECT_EQ(s.staleness, 3);
  EXPECT_EQ(strategy_of({{"name", "ps-async"}, {"schedule", "bounded"}, {"staleness", 0}}).staleness, 0);
  EXPECT_EQ(strategy_of({{"name", "ssp:6"}, {"schedule", "bounded"}}).staleness, 6);
}

TEST(Strategy, ServerPlacementTakesItsOwnDefaultCount) {
  const auto colocated = strategy_of({{"name", "ps-sync"}, {"servers", {{"placement", "colocated"}}}});
  EXPECT_EQ(colocated.servers.placement, st::ServerPlacement::colocated);
  EXPECT_EQ(colocated.servers.count, 0); // one per node
  const auto dedicated = strategy_of({{"name", "preset:MXNet"}, {"servers", {{"placement", "dedicated"}}}});
  EXPECT_EQ(dedicated.servers.count, 1);
  EXPECT_EQ(strategy_of({{"name", "ps-sync"}, {"servers", {{"placement", "colocated"}, {"count", 2}}}}).servers.count,
            2);
}

TEST(Strategy, PresetKeepsItsNameOnlyWhileUnchanged) {
  EXPECT_EQ(strategy_of({{"name", "preset:Petuum"}, {"staleness", 3}}).preset, "Petuum");
  EXPECT_EQ(strategy_of({{"preset", "petuum"}}).preset, "Petuum");
  EXPECT_EQ(strategy_of({{"name", "preset:Petuum"}, {"preset", "Petuum"}}).preset, "Petuum");
  const auto changed = strategy_of({{"name", "preset:Petuum"}, {"staleness", 10}});
  EXPECT_TRUE(changed.preset.empty());
  EXPECT_EQ(changed.servers.count, 2); // the rest of the preset stays
  EXPECT_EQ(st::strategy_name(changed), "ssp:10");
}

TEST(Strategy, Compression) {
  const auto topk = parse(on_four_nodes({{"compression", "topk"}})).training.compression;
  EXPECT_EQ(topk.kind, st::CompressionKind::topk);
  EXPECT_EQ(topk, (st::CompressionSpec{.kind = st::CompressionKind::topk}));
  const auto c =
      parse(on_four_nodes(
                {{"compression", {{"kind", "powersgd"}, {"rank", 8}, {"ratio", 0.5}, {"error_feedback", false}}}}))
          .training.compression;
  EXPECT_EQ(c.kind, st::CompressionKind::powersgd);
  EXPECT_EQ(c.rank, 8);
  EXPECT_DOUBLE_EQ(c.ratio, 0.5);
  EXPECT_FALSE(c.error_feedback);
  EXPECT_DOUBLE_EQ(
      parse(on_four_nodes({{"compression", {{"kind", "randomk"}, {"ratio", 1}}}})).training.compression.ratio, 1);
  // 1-bit Adam as DeepSpeed's BERT-Large recipe runs it: 23,000 dense steps (freeze_step), read back canonically.
  const auto onebit = parse(on_four_nodes({{"compression", {{"kind", "sign"}, {"warmup_steps", 23000}}}}));
  EXPECT_EQ(onebit.training.compression.warmup_steps, 23000);
  EXPECT_EQ(to_json(onebit)["training"]["compression"]["warmup_steps"], 23000);
  EXPECT_EQ(parse(on_four_nodes({{"compression", "sign"}})).training.compression.warmup_steps, 0);
}

TEST(Strategy, Stragglers) {
  const Scenario s = parse(on_four_nodes(
      json::object(),
      {{"ranks", {3, 5}}, {"slowdown", 2.0}, {"jitter", {{"distribution", "lognormal"}, {"scale", 0.1}}}}));
  EXPECT_EQ(s.stragglers.ranks, (std::vector<int>{3, 5}));
  EXPECT_DOUBLE_EQ(s.stragglers.slowdown, 2);
  EXPECT_EQ(s.stragglers.jitter, st::Jitter::lognormal);
  EXPECT_DOUBLE_EQ(s.stragglers.scale, 0.1);
  EXPECT_TRUE(s.stragglers.any());
  // Jitter alone, and no ranks.
  const Scenario j = parse(on_four_nodes(json::object(), {{"jitter", {{"distribution", "uniform"}, {"scale", 0.2}}}}));
  EXPECT_TRUE(j.stragglers.ranks.empty());
  EXPECT_EQ(j.stragglers.jitter, st::Jitter::uniform);
  EXPECT_FALSE(parse(on_four_nodes(json::object(), json::object())).stragglers.any());
  EXPECT_FALSE(parse(on_four_nodes(json::object(), {{"jitter", {{"distribution", "none"}}}})).stragglers.any());
  // The last worker: 8 GPUs less the two of one dedicated server node.
  EXPECT_EQ(parse(on_four_nodes({{"strategy", "ps-sync"}}, {{"ranks", {5}}, {"slowdown", 3}})).stragglers.ranks[0], 5);
}

// GPUs of one model at different speeds: the measured spread when absent; 0 (identical GPUs) written back in the
// canonical form, which leaves the section out at the default; out of range refused at its field.
TEST(Strategy, GpuSpeedSigma) {
  EXPECT_DOUBLE_EQ(parse(test::minimal()).stragglers.gpu_speed_sigma, st::kMeasuredGpuSpeedSigma);
  EXPECT_NEAR(st::kMeasuredGpuSpeedSigma, 0.08 / (2 * 2.70), 1e-4); // Sinha et al.'s 8% span over 5.40 deviations
  const Scenario identical = parse(on_four_nodes(json::object(), {{"gpu_speed_sigma", 0}}));
  EXPECT_EQ(identical.stragglers.gpu_speed_sigma, 0);
  EXPECT_FALSE(identical.stragglers.any()); // the auto fidelity's stragglers are the ones that vary
  EXPECT_EQ(to_json(identical)["stragglers"]["gpu_speed_sigma"], 0);
  expect_round_trip(identical);
  EXPECT_FALSE(to_json(parse(test::minimal())).contains("stragglers"));
  EXPECT_SCENARIO_ERROR(error_of(on_four_nodes(json::object(), {{"gpu_speed_sigma", 0.6}})),
                        "/stragglers/gpu_speed_sigma", "0.5");
  EXPECT_SCENARIO_ERROR(error_of(on_four_nodes(json::object(), {{"gpu_speed_sigma", -0.01}})),
                        "/stragglers/gpu_speed_sigma", "expected");
  EXPECT_SCENARIO_ERROR(error_of(on_four_nodes(json::object(), {{"gpu_speed_sigma", "wide"}})),
                        "/stragglers/gpu_speed_sigma", "expected");
}

// One kernel's run-to-run spread: the measured median when absent; 0 (every kernel at its priced time) written back and
// read again; out of range refused at its field.
TEST(Strategy, KernelNoiseSigma) {
  EXPECT_DOUBLE_EQ(parse(test::minimal()).stragglers.kernel_noise_sigma, st::kMeasuredKernelNoiseSigma);
  const Scenario exact = parse(on_four_nodes(json::object(), {{"kernel_noise_sigma", 0}}));
  EXPECT_EQ(exact.stragglers.kernel_noise_sigma, 0);
  EXPECT_FALSE(exact.stragglers.any());
  EXPECT_EQ(to_json(exact)["stragglers"]["kernel_noise_sigma"], 0);
  expect_round_trip(exact);
  EXPECT_SCENARIO_ERROR(error_of(on_four_nodes(json::object(), {{"kernel_noise_sigma", 0.3}})),
                        "/stragglers/kernel_noise_sigma", "0.2");
  EXPECT_SCENARIO_ERROR(error_of(on_four_nodes(json::object(), {{"kernel_noise_sigma", -0.01}})),
                        "/stragglers/kernel_noise_sigma", "expected");
}

TEST(Strategy, CanonicalFormWritesEveryFieldAndReadsBack) {
  const Scenario s = parse(on_four_nodes({{"strategy", "preset:FireCaffe"}}));
  const json strategy = to_json(s)["training"]["strategy"];
  EXPECT_EQ(strategy["name"], "preset:FireCaffe");
  EXPECT_EQ(strategy["preset"], "FireCaffe");
  EXPECT_EQ(strategy["algorithm"], "binomial-tree");
  for (const auto* key : {"kind", "schedule", "staleness", "servers", "sparse_embeddings", "graph", "probability",
                          "period", "backup_workers", "accumulation"})
    EXPECT_TRUE(strategy.contains(key)) << key;
  EXPECT_EQ(strategy["servers"]["placement"], "dedicated");
  expect_round_trip(s);
}

TEST(Strategy, CanonicalFormRoundTrips) {
  for (const auto& name : st::strategy_forms()) {
    if (name == "preset:NAME") continue;
    SCOPED_TRACE(name);
    expect_round_trip(parse(on_four_nodes({{"strategy", name.substr(0, name.find('['))}})));
  }
  for (const auto& p : st::presets()) {
    if (st::dedicated_server_nodes(p.strategy) >= 4) continue;
    SCOPED_TRACE(p.name);
    expect_round_trip(parse(on_four_nodes({{"strategy", "preset:" + p.name}})));
  }
  expect_round_trip(parse(on_four_nodes({{"strategy", {{"name", "preset:Petuum"}, {"staleness", 7}}}})));
  expect_round_trip(parse(on_four_nodes(
      {{"strategy",
        {{"kind", "easgd"}, {"schedule", "sync"}, {"servers", {{"placement", "colocated"}}}, {"backup_workers", 2}}},
       {"compression", {{"kind", "topk"}, {"ratio", 0.001}, {"error_feedback", false}}}},
      {{"ranks", {0, 7}}, {"slowdown", 1.5}, {"jitter", {{"distribution", "exponential"}, {"scale", 0.05}}}})));
  const json canonical = to_json(parse(on_four_nodes({{"compression", "sign"}}, {{"ranks", {1}}, {"slowdown", 2}})));
  EXPECT_EQ(canonical["training"]["compression"]["kind"], "sign");
  EXPECT_EQ(canonical["stragglers"]["jitter"]["distribution"], "none");
}

TEST(Strategy, OverrideByShortName) {
  const Scenario s = parse(on_four_nodes(json::object()), {parse_override("training.strategy=ssp:4")});
  EXPECT_EQ(s.training.strategy.staleness, 4);
  EXPECT_EQ(parse(on_four_nodes({{"strategy", {{"name", "ssp"}}}}), {parse_override("training.strategy.staleness=6")})
                .training.strategy.staleness,
            6);
}

// --- errors ---

ScenarioError strategy_error(const json& strategy) {
  return error_of(on_four_nodes({{"strategy", strategy}}));
}

TEST(BadStrategy, UnknownNameListsTheForms) {
  const auto e = strategy_error("parameter_server");
  EXPECT_SCENARIO_ERROR(e, "/training/strategy", "unknown strategy \"parameter_server\"");
  for (const auto& form : st::strategy_forms())
    EXPECT_TRUE(test::contains(e.detail(), form)) << e.what();
  EXPECT_SCENARIO_ERROR(strategy_error("ps_sync"), "/training/strategy",
                        "unknown strategy \"ps_sync\"; did you mean \"ps-sync\"? Expected allreduce, ps-sync");
  EXPECT_SCENARIO_ERROR(strategy_error("ssp:x"), "/training/strategy", "integer from 0 to 1000");
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "gossip:2"}}), "/training/strategy/name", "(0, 1]");
  EXPECT_SCENARIO_ERROR(strategy_error(3), "/training/strategy", "expected a short name (allreduce, ps-sync");
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", 3}}), "/training/strategy/name", "expected a non-empty string");
}

TEST(BadStrategy, PresetsByWrongName) {
  EXPECT_SCENARIO_ERROR(strategy_error("preset:Caffe"), "/training/strategy", "unknown preset \"Caffe\"");
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "preset:Petuum"}, {"preset", "MXNet"}}), "/training/strategy/preset",
                        "names preset \"MXNet\", and \"name\" gives \"Petuum\"");
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "ssp"}, {"preset", "MXNet"}}), "/training/strategy/preset",
                        "\"name\" gives no preset");
}

// COTS HPC (Coates et al. 2013): one model copy split over every GPU, synchronous SGD. Without parallelism.tensor
// the preset makes all 4 x 2 = 8 GPUs one tensor-parallel group (of each pipeline stage); a given degree wins.
TEST(Strategy, CotsHpcSplitsTheModelOverEveryGpu) {
  const Scenario s = parse(on_four_nodes({{"strategy", "preset:COTS HPC"}}));
  EXPECT_EQ(s.training.strategy.kind, st::Kind::allreduce);
  EXPECT_EQ(s.training.strategy.preset, "COTS HPC");
  EXPECT_EQ(s.parallelism.tensor, 8);
  EXPECT_EQ(s.parallelism.pipeline, 1);
  EXPECT_EQ(s.parallelism.data, 1);             // one model copy: no gradient all-reduce
  EXPECT_EQ(s.framework.name, "megatron-core"); // what "megatron" names
  EXPECT_EQ(s.global_batch(), 32);              // every rank of the group sees the same 32 samples

  auto staged = on_four_nodes({{"strategy", {{"preset", "cots-hpc"}}}});
  staged["parallelism"] = {{"pipeline", 2}};
  const Scenario two_stages = parse(staged);
  EXPECT_EQ(two_stages.parallelism.tensor, 4); // 8 GPUs / 2 stages
  EXPECT_EQ(two_stages.parallelism.data, 1);

  auto given = on_four_nodes({{"strategy", "preset:COTS HPC"}});
  given["parallelism"] = {{"tensor", 2}};
  const Scenario hybrid = parse(given);
  EXPECT_EQ(hybrid.parallelism.tensor, 2);
  EXPECT_EQ(hybrid.parallelism.data, 4);

  // Without the preset the same cluster is data parallel.
  EXPECT_EQ(parse(on_four_nodes({{"strategy", "allreduce"}})).parallelism.tensor, 1);
}

TEST(BadStrategy, CotsHpcNeedsAModelItCanSplit) {
  auto cnn = on_four_nodes({{"strategy", "preset:COTS HPC"}});
  cnn["model"] = {{"preset", "resnet50"}, {"batch_per_gpu", 2}};
  EXPECT_SCENARIO_ERROR(error_of(cnn), "/training/strategy",
                        "preset \"COTS HPC\" splits the model over 8 GPUs (tensor parallelism 8), but model "
                        "\"resnet50\" has no op tensor parallelism splits");
  cnn["training"]["strategy"] = {{"preset", "COTS HPC"}};
  EXPECT_SCENARIO_ERROR(error_of(cnn), "/training/strategy/preset", "no op tensor parallelism splits");

  // GPT-3 125M has 12 heads: 8 GPUs cannot split them, 4 can (with 2 copies of the model, or 2 context ranks).
  auto gpt = on_four_nodes({{"strategy", {{"name", "preset:COTS HPC"}}}});
  gpt["model"] = {{"preset", "gpt3-125m"}, {"batch_per_gpu", 1}};
  EXPECT_SCENARIO_ERROR(error_of(gpt), "/training/strategy/name", "must divide the model's 12 attention heads");
  gpt["parallelism"] = {{"tensor", 4}};
  EXPECT_EQ(parse(gpt).parallelism.data, 2);
  gpt["parallelism"] = {{"context", 2}};
  const Scenario context = parse(gpt);
  EXPECT_EQ(context.parallelism.tensor, 4); // 8 GPUs / 2 context ranks
  EXPECT_EQ(context.parallelism.data, 1);

  // Coarse fidelity prices tensor-parallel collectives inside a node; these groups span 4 nodes of 2 GPUs.
  auto coarse = on_four_nodes({{"strategy", "preset:COTS HPC"}});
  coarse["run"] = {{"fidelity", "coarse"}};
  EXPECT_SCENARIO_ERROR(error_of(coarse), "/run/fidelity", "groups of 8 GPUs span nodes of 2");
  coarse["run"]["fidelity"] = "aggregate";
  EXPECT_EQ(parse(coarse).run.fidelity, Fidelity::aggregate);
}

TEST(BadStrategy, FieldsOutOfRange) {
  EXPECT_SCENARIO_ERROR(strategy_error({{"kind", "parameter_server"}}), "/training/strategy/kind",
                        "unknown strategy kind \"parameter_server\"; did you mean \"parameter-server\"?");
  EXPECT_SCENARIO_ERROR(strategy_error({{"schedule", "synchronous"}}), "/training/strategy/schedule",
                        "unknown schedule \"synchronous\"");
  EXPECT_SCENARIO_ERROR(strategy_error({{"staleness", 1001}}), "/training/strategy/staleness", "<= 1000");
  EXPECT_SCENARIO_ERROR(strategy_error({{"staleness", -1}}), "/training/strategy/staleness", "an integer >= 0");
  EXPECT_SCENARIO_ERROR(strategy_error({{"probability", 0}}), "/training/strategy/probability",
                        "expected a number in (0, 1], got 0");
  EXPECT_SCENARIO_ERROR(strategy_error({{"probability", 1.5}}), "/training/strategy/probability", "(0, 1]");
  EXPECT_SCENARIO_ERROR(strategy_error({{"period", 0}}), "/training/strategy/period", "an integer >= 1");
  EXPECT_SCENARIO_ERROR(strategy_error({{"period", 1000001}}), "/training/strategy/period", "<= 1000000");
  EXPECT_SCENARIO_ERROR(strategy_error({{"accumulation", 0}}), "/training/strategy/accumulation", "an integer >= 1");
  EXPECT_SCENARIO_ERROR(strategy_error({{"accumulation", 2000000}}), "/training/strategy/accumulation", "<= 1000000");
  EXPECT_SCENARIO_ERROR(strategy_error({{"backup_workers", -1}}), "/training/strategy/backup_workers",
                        "an integer >= 0");
  EXPECT_SCENARIO_ERROR(strategy_error({{"graph", "torus"}}), "/training/strategy/graph", "unknown peer graph");
  EXPECT_SCENARIO_ERROR(strategy_error({{"algorithm", "rinng"}}), "/training/strategy/algorithm",
                        "did you mean \"ring\"?");
  EXPECT_SCENARIO_ERROR(strategy_error({{"stalenes", 3}}), "/training/strategy/stalenes",
                        "unknown key \"stalenes\"; did you mean \"staleness\"?");
  EXPECT_SCENARIO_ERROR(strategy_error({{"sparse_embeddings", "yes"}}), "/training/strategy/sparse_embeddings",
                        "expected true or false");
}

TEST(BadStrategy, Servers) {
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "ps-sync"}, {"servers", {{"count", -1}}}}),
                        "/training/strategy/servers/count", "an integer >= 0");
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "ps-sync"}, {"servers", {{"count", 0}}}}),
                        "/training/strategy/servers/count", "needs \"placement\": \"colocated\"");
  EXPECT_SCENARIO_ERROR(
      strategy_error({{"name", "preset:MXNet"}, {"servers", {{"placement", "dedicated"}, {"count", 0}}}}),
      "/training/strategy/servers/count", "dedicated servers need a count >= 1");
  EXPECT_SCENARIO_ERROR(strategy_error({{"servers", {{"placement", "remote"}}}}),
                        "/training/strategy/servers/placement", "unknown server placement \"remote\"");
  EXPECT_SCENARIO_ERROR(strategy_error({{"servers", 2}}), "/training/strategy/servers", "expected an object");
}

TEST(BadStrategy, DedicatedServersLeaveANodeToTrain) {
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "ps-sync"}, {"servers", {{"count", 4}}}}),
                        "/training/strategy/servers/count",
                        "4 dedicated server nodes need at least 5 nodes, one left to train, and the cluster has 4");
  // A count the name set is reported at the name.
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"strategy", "preset:Petuum"}}}})), "/training/strategy",
                        "2 dedicated server nodes need at least 3 nodes");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"strategy", {{"name", "preset:Petuum"}}}}}})),
                        "/training/strategy", "2 dedicated server nodes need at least 3 nodes");
  // Without servers, the layout the spec carries is not used.
  EXPECT_NO_THROW(parse(patched({{"cluster", {{"nodes", 1}}}, {"training", {{"strategy", "gossip"}}}})));
  EXPECT_NO_THROW(parse(patched({{"training", {{"strategy", "preset:MXNet"}}}})));
}

TEST(BadStrategy, BackupWorkersAreFewerThanWorkers) {
  EXPECT_NO_THROW(strategy_of({{"name", "ps-sync"}, {"backup_workers", 5}}));
  EXPECT_SCENARIO_ERROR(strategy_error({{"name", "ps-sync"}, {"backup_workers", 6}}),
                        "/training/strategy/backup_workers",
                        "expected fewer backup workers than workers, 6 workers (8 GPUs less the 2 of the 1 dedicated "
                        "server node), got 6");
  EXPECT_SCENARIO_ERROR(strategy_error({{"backup_workers", 8}}), "/training/strategy/backup_workers",
                        "expected fewer backup workers than workers, 8 workers, got 8");
}

TEST(BadCompression, EachPointer) {
  const auto compression_error = [](const json& c) { return error_of(on_four_nodes({{"compression", c}})); };
  EXPECT_SCENARIO_ERROR(compression_error("top-k"), "/training/compression", "unknown compression \"top-k\"");
  EXPECT_SCENARIO_ERROR(compression_error(3), "/training/compression", "or an object {\"kind\"");
  EXPECT_SCENARIO_ERROR(compression_error(json::object()), "/training/compression/kind", "missing; expected one of");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "topk"}, {"ratio", 0}}), "/training/compression/ratio",
                        "expected a number in (0, 1], got 0");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "topk"}, {"ratio", 1.01}}), "/training/compression/ratio",
                        "(0, 1]");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "powersgd"}, {"rank", 0}}), "/training/compression/rank",
                        "an integer >= 1");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "sign"}, {"error_feedback", 1}}),
                        "/training/compression/error_feedback", "expected true or false");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "sign"}, {"ration", 0.1}}), "/training/compression/ration",
                        "did you mean \"ratio\"?");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "sign"}, {"warmup_steps", -1}}),
                        "/training/compression/warmup_steps", "expected");
  EXPECT_SCENARIO_ERROR(compression_error({{"kind", "none"}, {"warmup_steps", 10}}),
                        "/training/compression/warmup_steps", "need a compression kind");
}

TEST(BadStragglers, EachPointer) {
  const auto stragglers_error = [](const json& s, const json& training = json::object()) {
    return error_of(on_four_nodes(training, s));
  };
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {1, 8}}, {"slowdown", 2}}), "/stragglers/ranks/1",
                        "expected a worker rank from 0 to 7 (8 workers), got 8");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {6}}, {"slowdown", 2}}, {{"strategy", "ps-sync"}}),
                        "/stragglers/ranks/0",
                        "expected a worker rank from 0 to 5 (6 workers (8 GPUs less the 2 of the 1 dedicated server "
                        "node)), got 6");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {-1}}, {"slowdown", 2}}), "/stragglers/ranks/0", "got -1");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {"3"}}, {"slowdown", 2}}), "/stragglers/ranks/0", "got \"3\"");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {3, 5, 3}}, {"slowdown", 2}}), "/stragglers/ranks/2",
                        "rank 3 is listed twice");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", 3}, {"slowdown", 2}}), "/stragglers/ranks",
                        "expected an array of worker ranks");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {3}}}), "/stragglers/slowdown", "missing; expected a number >= 1");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"ranks", {3}}, {"slowdown", 0.5}}), "/stragglers/slowdown",
                        "expected a number >= 1 and <= 1e+06, got 0.5");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"jitter", {{"distribution", "normal"}, {"scale", 1}}}}),
                        "/stragglers/jitter/distribution", "unknown jitter distribution \"normal\"");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"jitter", {{"scale", 1}}}}), "/stragglers/jitter/distribution",
                        "missing; expected one of \"none\", \"lognormal\"");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"jitter", {{"distribution", "uniform"}, {"scale", -0.1}}}}),
                        "/stragglers/jitter/scale", "expected a number >= 0 and <= 1000, got -0.1");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"jitter", {{"distribution", "uniform"}}}}), "/stragglers/jitter/scale",
                        "missing");
  EXPECT_SCENARIO_ERROR(stragglers_error({{"rank", {1}}}), "/stragglers/rank", "did you mean \"ranks\"?");
  EXPECT_SCENARIO_ERROR(stragglers_error(true), "/stragglers", "expected an object");
}

} // namespace
} // namespace dtsim::scenario
