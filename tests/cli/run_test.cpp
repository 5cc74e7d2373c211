// `dtsim run` and `dtsim sweep` as a user runs them: every shipped scenario runs, output is
// byte-identical across runs, and the files written are what they claim to be.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kScenarios = fs::path(DTSIM_SOURCE_DIR) / "scenarios";

class ShippedScenarios : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedScenarios, Runs) {
  TempDir dir;
  const auto path = kScenarios / (GetParam() + ".json");
  const auto inv = run_dtsim("run '" + path.string() + "'", dir);
  EXPECT_EQ(inv.status, 0) << path << "\n" << inv.err;
  EXPECT_NE(inv.out.find("throughput"), std::string::npos) << inv.out;
}

INSTANTIATE_TEST_SUITE_P(Every, ShippedScenarios, ::testing::ValuesIn(shipped_scenarios()),
                         [](const auto& info) { return test_name(info.param); });

TEST(ShippedScenarios, AtLeastTheQuickstartShips) {
  EXPECT_GE(shipped_scenarios().size(), 2u);
}

TEST(Determinism, TwoRunsWriteByteIdenticalJsonAndTraces) {
  TempDir dir;
  const auto scenario = (kScenarios / "quickstart.json").string();
  std::string json[2], trace[2];
  for (int i = 0; i < 2; ++i) {
    const auto j = dir.path() / ("run" + std::to_string(i) + ".json");
    const auto t = dir.path() / ("trace" + std::to_string(i) + ".json");
    const auto inv = run_dtsim("run '" + scenario + "' --json '" + j.string() + "' --trace '" + t.string() + "'", dir);
    ASSERT_EQ(inv.status, 0) << inv.err;
    json[i] = read_file(j);
    trace[i] = read_file(t);
  }
  EXPECT_FALSE(json[0].empty());
  EXPECT_EQ(json[0], json[1]);
  EXPECT_EQ(trace[0], trace[1]);
}

TEST(RunOutput, JsonAndTraceDescribeTheRun) {
  TempDir dir;
  const auto j = dir.path() / "r.json";
  const auto t = dir.path() / "t.json";
  const auto inv = run_dtsim("run '" + (kScenarios / "quickstart.json").string() + "' --set cluster.nodes=2 --json '" +
                                 j.string() + "' --trace '" + t.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto result = nlohmann::json::parse(read_file(j));
  EXPECT_EQ(result.at("nodes"), 2); // the override took effect
  const double mean = result.at("iteration_seconds").at("mean");
  const auto& b = result.at("breakdown_seconds_per_iteration");
  // The breakdown accounts for the whole iteration.
  EXPECT_NEAR(b.at("compute").get<double>() + b.at("exposed_communication").get<double>() + b.at("idle").get<double>(),
              mean, 1e-9 * mean + 1e-12);
  const auto trace = nlohmann::json::parse(read_file(t));
  int complete = 0;
  for (const auto& e : trace.at("traceEvents"))
    complete += e.at("ph") == "X";
  EXPECT_GT(complete, 0);
}

// The NCCL release a scenario names is in the report and the result; the default's line is left out.
TEST(RunOutput, TheReportNamesANonDefaultNcclRelease) {
  TempDir dir;
  const auto scenario = "'" + (kScenarios / "quickstart.json").string() + "' --set cluster.nodes=2";
  const auto older = run_dtsim("run " + scenario + " --set training.nccl=2.6.3", dir);
  ASSERT_EQ(older.status, 0) << older.err;
  EXPECT_NE(older.out.find("NCCL release                 2.6.3 (training.nccl"), std::string::npos) << older.out;
  const auto current = run_dtsim("run " + scenario + " --json -", dir);
  ASSERT_EQ(current.status, 0) << current.err;
  EXPECT_EQ(nlohmann::json::parse(current.out).at("nccl"), "2.30.7");
  const auto text = run_dtsim("run " + scenario, dir);
  EXPECT_EQ(text.out.find("NCCL release"), std::string::npos) << text.out;
}

TEST(Sweep, PrintsSpeedupAndWritesCsv) {
  TempDir dir;
  const auto csv = dir.path() / "sweep.csv";
  const auto inv = run_dtsim("sweep '" + (kScenarios / "quickstart.json").string() + "' --nodes 1..4 --jobs 2 --csv '" +
                                 csv.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("speedup"), std::string::npos);
  const auto text = read_file(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4); // header + nodes 1, 2, 4
  EXPECT_EQ(text.rfind("nodes,gpus,iteration_seconds", 0), 0u);
}

TEST(Cli, VersionAndHelp) {
  TempDir dir;
  auto inv = run_dtsim("--version", dir);
  EXPECT_EQ(inv.status, 0);
  EXPECT_EQ(inv.out.rfind("dtsim ", 0), 0u);
  EXPECT_NE(inv.out.find("\ncommit "), std::string::npos) << inv.out; // the commit it was built from
  inv = run_dtsim("run --help", dir);
  EXPECT_EQ(inv.status, 0);
  EXPECT_NE(inv.out.find("--trace"), std::string::npos);
  // Options say what they take: a file, a size, a field's path and value; never CLI11's bare TEXT for those.
  for (const auto* shown : {"scenario FILE", "--json FILE", "--trace FILE", "--max-memory SIZE", "--set PATH=VALUE"})
    EXPECT_NE(inv.out.find(shown), std::string::npos) << shown << " in\n" << inv.out;
  EXPECT_EQ(inv.out.find("--json TEXT"), std::string::npos) << inv.out;
}

} // namespace
} // namespace dtsim::testing
