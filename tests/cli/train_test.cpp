// `dtsim train` as a user runs it: the shipped whole-run scenarios, byte-identical output for a seed, and bad input
// refused with exit 2 naming the field.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kScenarios = fs::path(DTSIM_SOURCE_DIR) / "scenarios";

std::string small_run() {
  return R"({
    "version": 1, "name": "small-run",
    "model": {"preset": "mlp-small", "batch_per_gpu": 64},
    "cluster": {"nodes": 4, "gpus_per_node": 1, "gpu": "v100", "nic": {"bandwidth": "10Gbps"}, "price_per_hour": 3},
    "training": {"steps": 200000},
    "storage": {"write_bandwidth": "1GB/s", "latency": "1s"},
    "checkpoint": {"interval": "young"},
    "failures": {"sources": [{"component": "node", "mtbf": "2h"}]},
    "restart": {"reschedule": "2min"},
    "run": {"iterations": 2}
  })";
}

TEST(TrainCommand, PrintsTheRunsDistributionAndWritesEveryTrial) {
  TempDir dir;
  const auto scenario = dir.write("s.json", small_run());
  const auto inv = run_dtsim("train '" + scenario.string() + "' --trials 6 --json '" +
                                 (dir.path() / "r.json").string() + "' --csv '" + (dir.path() / "r.csv").string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("time to train"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("Young's sqrt(2 C M)"), std::string::npos) << inv.out;
  const auto result = json::parse(read_file(dir.path() / "r.json"));
  ASSERT_EQ(result.at("trials").size(), 6u);
  for (const auto& t : result.at("trials")) // the accounting adds up in every trial
    EXPECT_NEAR(t.at("wall_seconds").get<double>(),
                t.at("useful_seconds").get<double>() + t.at("checkpoint_seconds").get<double>() +
                    t.at("lost_seconds").get<double>() + t.at("down_seconds").get<double>(),
                1e-6 * t.at("wall_seconds").get<double>());
  // The CSV: a header and one row per trial.
  const auto csv = read_file(dir.path() / "r.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
}

TEST(TrainCommand, TheSameSeedGivesTheSameBytesAndAnotherSeedOtherTrials) {
  TempDir dir;
  const auto scenario = dir.write("s.json", small_run());
  std::string out[3];
  for (int i = 0; i < 3; ++i) {
    const auto j = dir.path() / ("r" + std::to_string(i) + ".json");
    const auto inv = run_dtsim("train '" + scenario.string() + "' --trials 4 --jobs 2 --seed " +
                                   std::to_string(i < 2 ? 7 : 8) + " --json '" + j.string() + "'",
                               dir);
    ASSERT_EQ(inv.status, 0) << inv.err;
    out[i] = read_file(j);
  }
  EXPECT_EQ(out[0], out[1]);
  EXPECT_NE(out[0], out[2]);
}

TEST(TrainCommand, ShippedSpotScenarioCostsTheSpotPriceAndOnDemandWithoutInterruptionsMatchesIt) {
  TempDir dir;
  const auto path = (kScenarios / "resnet50-p3.2xlarge-spot.json").string();
  const auto spot =
      run_dtsim("train '" + path + "' --trials 20 --json '" + (dir.path() / "spot.json").string() + "'", dir);
  ASSERT_EQ(spot.status, 0) << spot.err;
  // Spot with no interruptions at the on-demand price is the on-demand run: the same time, the on-demand dollars.
  const auto calm = run_dtsim("train '" + path +
                                  "' --trials 1 --set spot.interruptions_per_month=0 --set spot.price_per_hour=3.06 "
                                  "--json '" +
                                  (dir.path() / "calm.json").string() + "'",
                              dir);
  ASSERT_EQ(calm.status, 0) << calm.err;
  const auto s = json::parse(read_file(dir.path() / "spot.json"));
  const auto c = json::parse(read_file(dir.path() / "calm.json"));
  const double wall = c.at("trials").at(0).at("wall_seconds");
  EXPECT_NEAR(c.at("trials").at(0).at("cost_usd").get<double>(), 3.06 * 8 * wall / 3600, 1e-6);
  for (const auto& t : s.at("trials")) {
    EXPECT_GE(t.at("wall_seconds").get<double>(), wall - 1e-6); // interruptions only add time
    EXPECT_NEAR(t.at("cost_usd").get<double>(), 0.92 * 8 * t.at("wall_seconds").get<double>() / 3600, 1e-6);
  }
}

TEST(TrainCommand, ShippedElasticScenarioLosesLessThanWaitingForReplacements) {
  TempDir dir;
  const auto path = (kScenarios / "resnet50-p3.2xlarge-spot-elastic.json").string();
  const auto j = [&](const char* name) { return (dir.path() / name).string(); };
  auto inv = run_dtsim("train '" + path + "' --trials 20 --json '" + j("shrink.json") + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  inv = run_dtsim("train '" + path + "' --trials 20 --set elastic.policy=wait --json '" + j("wait.json") + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto shrink = json::parse(read_file(j("shrink.json")));
  const auto wait = json::parse(read_file(j("wait.json")));
  // One node of eight lost: the same 512 images on 7 GPUs (74 each) take a full step's worth of time of its own.
  const auto shapes = shrink.at("elastic").at("seconds_per_step_by_replicas_lost");
  EXPECT_EQ(shapes.at(0).get<double>(), shrink.at("iteration_seconds").get<double>());
  EXPECT_GT(shapes.at(1).get<double>(), shapes.at(0).get<double>());
  EXPECT_TRUE(wait.at("elastic").is_null());
  for (const auto& t : shrink.at("trials")) // the accounting adds up, the slowdown a term of its own
    EXPECT_NEAR(t.at("wall_seconds").get<double>(),
                t.at("useful_seconds").get<double>() + t.at("checkpoint_seconds").get<double>() +
                    t.at("lost_seconds").get<double>() + t.at("down_seconds").get<double>() +
                    t.at("degraded_seconds").get<double>(),
                1e-6 * t.at("wall_seconds").get<double>());
  // Waiting 10 minutes for each replacement costs more than 2 minutes' reconfiguration and some minutes on 7 nodes.
  EXPECT_LT(shrink.at("summary").at("wall_seconds").at("mean").get<double>(),
            wait.at("summary").at("wall_seconds").at("mean").get<double>());
}

TEST(TrainCommand, ShippedRedundancyScenarioFailsOverAndBeatsWaitingAtItsRate) {
  TempDir dir;
  const auto path = (kScenarios / "gpt2-xl-p3.2xlarge-spot-redundancy.json").string();
  const auto j = [&](const char* name) { return (dir.path() / name).string(); };
  auto inv = run_dtsim("train '" + path + "' --trials 10 --json '" + j("bamboo.json") + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  inv = run_dtsim("train '" + path + "' --trials 10 --set spot.policy=wait --json '" + j("wait.json") + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto bamboo = json::parse(read_file(j("bamboo.json")));
  const auto wait = json::parse(read_file(j("wait.json")));
  const auto& r = bamboo.at("redundancy");
  // The redundant forwards and the replica's upkeep lengthen the iteration; the plain one is what waiting runs.
  EXPECT_GT(bamboo.at("iteration_seconds").get<double>(), r.at("iteration_without_seconds").get<double>());
  EXPECT_DOUBLE_EQ(wait.at("iteration_seconds").get<double>(), r.at("iteration_without_seconds").get<double>());
  EXPECT_TRUE(wait.at("redundancy").is_null());
  // A node is down about 100 / 720 h x 12 min = 2.8% of the time: all but about 5.5% of preemptions fail over.
  int preemptions = 0, failovers = 0;
  for (const auto& t : bamboo.at("trials")) {
    preemptions += t.at("preemptions").get<int>();
    failovers += t.at("failovers").get<int>();
    EXPECT_NEAR(t.at("wall_seconds").get<double>(),
                t.at("useful_seconds").get<double>() + t.at("checkpoint_seconds").get<double>() +
                    t.at("lost_seconds").get<double>() + t.at("down_seconds").get<double>() +
                    t.at("degraded_seconds").get<double>(),
                1e-6 * t.at("wall_seconds").get<double>());
  }
  EXPECT_GT(failovers, 0.85 * preemptions);
  EXPECT_LT(bamboo.at("summary").at("wall_seconds").at("mean").get<double>(),
            wait.at("summary").at("wall_seconds").at("mean").get<double>());
}

TEST(TrainCommand, ShippedLlama3RunMeetsFailuresAtThePublishedRate) {
  TempDir dir;
  const auto path = (kScenarios / "llama3-405b-h100x16384-train.json").string();
  const auto inv = run_dtsim("train '" + path + "' --trials 4 --json '" + (dir.path() / "r.json").string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto r = json::parse(read_file(dir.path() / "r.json"));
  // 419 interruptions in 54 days on this cluster (Dubey et al. 2024, Table 5).
  EXPECT_NEAR(r.at("mean_time_between_interruptions_seconds").get<double>(), 54 * 86400.0 / 419, 1e-3);
  for (const auto& t : r.at("trials")) {
    const double days = t.at("wall_seconds").get<double>() / 86400;
    EXPECT_NEAR(t.at("failures").get<double>(), days * 419 / 54, 4 * std::sqrt(days * 419 / 54));
  }
}

TEST(TrainCommand, AGivenIterationTimeReplacesTheSimulatedOne) {
  TempDir dir;
  const auto scenario = dir.write("s.json", small_run());
  const auto j = dir.path() / "r.json";
  auto inv =
      run_dtsim("train '" + scenario.string() + "' --trials 2 --iteration-time 0.5s --json '" + j.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto r = json::parse(read_file(j));
  EXPECT_EQ(r.at("iteration_seconds"), 0.5);
  EXPECT_EQ(r.at("trials").at(0).at("useful_seconds"), 200000 * 0.5); // steps x the given time
  inv = run_dtsim("train '" + scenario.string() + "' --iteration-time 5GB", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--iteration-time: expected a duration"), std::string::npos) << inv.err;
}

TEST(TrainCommand, RunsThatCouldNotFinishAreRefusedBeforeTheySimulate) {
  TempDir dir;
  const auto scenario = dir.write("s.json", small_run());
  // A failure a second on 4 nodes against a 2-minute reschedule: a restart would almost never complete.
  auto inv = run_dtsim("train '" + scenario.string() + "' --trials 1 --set failures.sources.0.mtbf=4s", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/failures: the job is interrupted every 1.000 s on average"), std::string::npos) << inv.err;
  // A checkpoint every millisecond of a 10^12-step run: 10^12 checkpoints to replay.
  inv = run_dtsim(
      "train '" + scenario.string() +
          "' --trials 1 --iteration-time 1ms --set training.steps=1000000000000 --set checkpoint.interval=1ms",
      dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/checkpoint/interval: a trial would replay about"), std::string::npos) << inv.err;
  // Weibull units one by one: 64 nodes x a million each.
  inv = run_dtsim("train '" + scenario.string() +
                      "' --trials 1 --set cluster.nodes=64 --set failures.sources.0.distribution=weibull --set "
                      "failures.sources.0.units_per_node=1000000 --set failures.sources.0.mtbf=9000y",
                  dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/failures/sources/0/units_per_node: 64000000 Weibull units"), std::string::npos) << inv.err;
}

TEST(ListFailures, ShowsEachUnitsMtbfFromTheStudysCounts) {
  TempDir dir;
  const auto inv = run_dtsim("list failures", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  // 268 GPU interruptions over 16,384 GPUs in 54 days: a GPU's MTBF is 16,384 x 54 / 268 = 3,301 days, 9.0 years.
  EXPECT_NE(inv.out.find("meta-llama3-h100   gpu                     8            9.0 y"), std::string::npos)
      << inv.out;
}

struct BadRun {
  const char* what;
  const char* set; // a --set assignment that breaks the small run
  const char* pointer;
};

std::ostream& operator<<(std::ostream& out, const BadRun& bad) { // how ctest names each case
  return out << bad.set;
}

class TrainBadInput : public ::testing::TestWithParam<BadRun> {};

TEST_P(TrainBadInput, ExitsTwoNamingTheField) {
  TempDir dir;
  const auto scenario = dir.write("s.json", small_run());
  const auto inv = run_dtsim("train '" + scenario.string() + "' --trials 1 --set '" + GetParam().set + "'", dir);
  EXPECT_EQ(inv.status, 2) << inv.out << inv.err;
  EXPECT_NE(inv.err.find(GetParam().pointer), std::string::npos) << inv.err;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, TrainBadInput,
    ::testing::Values(BadRun{"interval0", "checkpoint.interval=0", "/checkpoint/interval"},
                      BadRun{"negativeMtbf", "failures.sources.0.mtbf=-5", "/failures/sources/0/mtbf"},
                      BadRun{"noBandwidth", "storage.write_bandwidth=0", "/storage/write_bandwidth"},
                      BadRun{"negativeSpotRate", "spot.interruptions_per_month=-1", "/spot/interruptions_per_month"},
                      BadRun{"unknownPreset", "failures.preset=llama", "/failures/preset"},
                      BadRun{"shapeWithoutWeibull", "failures.sources.0.weibull_shape=2",
                             "/failures/sources/0/weibull_shape"},
                      BadRun{"zeroSteps", "training.steps=0", "/training/steps"},
                      BadRun{"latencyAsBandwidth", "storage.latency=5GB/s", "/storage/latency"},
                      BadRun{"unknownElasticPolicy", "elastic.policy=grow", "/elastic/policy"},
                      BadRun{"correlatedPastTheCluster", "failures.sources.0.nodes=5", "/failures"},
                      BadRun{"pueBelowOne", "energy.pue=0.5", "/energy/pue"}),
    [](const auto& info) { return std::string(info.param.what); });

TEST(ComparePolicies, RunsEachPolicyAsAWholeRunSideBySide) {
  TempDir dir;
  const auto scenario = dir.write("s.json", small_run());
  const auto csv = dir.path() / "p.csv";
  // No failures against the scenario's: the first is steps x iteration exactly, at 4 nodes x $3 an hour.
  const auto inv = run_dtsim("compare '" + scenario.string() +
                                 "' --trials 3 --policies 'healthy: failures.sources.0.mtbf=10000y, "
                                 "checkpoint.interval=1000y; failing: ; shrinking: elastic.policy=shrink' --csv '" +
                                 csv.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  for (const char* label : {"healthy", "failing", "shrinking"})
    EXPECT_NE(inv.out.find(label), std::string::npos) << inv.out;
  const auto rows = read_file(csv);
  ASSERT_EQ(std::count(rows.begin(), rows.end(), '\n'), 4) << rows; // a header and three policies
  const auto healthy = rows.substr(rows.find("healthy"));
  double iteration = 0, wall = 0, p90 = 0, goodput = 0, cost = 0;
  ASSERT_EQ(std::sscanf(healthy.c_str(), "healthy\",%lf,%lf,%lf,%lf,%lf", &iteration, &wall, &p90, &goodput, &cost), 5)
      << healthy;
  EXPECT_NEAR(wall, 200000 * iteration, 1e-6 * wall);
  EXPECT_NEAR(cost, 4 * 3 * wall / 3600, 1e-6 * cost);
  // --json - writes the JSON alone to standard output, a result per policy.
  const auto to_stdout =
      run_dtsim("compare '" + scenario.string() + "' --trials 2 --policies 'a: ; b: ' --json -", dir);
  ASSERT_EQ(to_stdout.status, 0) << to_stdout.err;
  EXPECT_EQ(json::parse(to_stdout.out).size(), 2u);
  // A policy that is not a list of overrides, and a policy's bad value, exit 2 before anything runs.
  auto bad = run_dtsim("compare '" + scenario.string() + "' --policies 'checkpoint'", dir);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("expected PATH=VALUE"), std::string::npos) << bad.err;
  bad = run_dtsim("compare '" + scenario.string() + "' --policies 'a: elastic.policy=grow'", dir);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("/elastic/policy"), std::string::npos) << bad.err;
  bad = run_dtsim("compare '" + scenario.string() + "' --policies 'a: ' --strategies allreduce", dir);
  EXPECT_EQ(bad.status, 2) << bad.err;
}

TEST(TrainCommand, ACheckpointWithoutStorageIsRefused) {
  TempDir dir;
  auto document = json::parse(small_run());
  document.erase("storage");
  const auto scenario = dir.write("s.json", document.dump());
  const auto inv = run_dtsim("train '" + scenario.string() + "' --trials 1", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/checkpoint: checkpoints need a \"storage\" section"), std::string::npos) << inv.err;
}

TEST(TrainCommand, ARunWithoutALengthIsRefusedBeforeItSimulates) {
  TempDir dir;
  auto document = json::parse(small_run());
  document["training"].erase("steps");
  const auto scenario = dir.write("s.json", document.dump());
  const auto inv = run_dtsim("train '" + scenario.string() + "' --trials 1", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/training/steps: missing"), std::string::npos) << inv.err;
}

} // namespace
} // namespace dtsim::testing
