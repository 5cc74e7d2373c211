// `dtsim compare` as a user runs it: one row per strategy in the order given, staleness where servers measure it, a
// bad name stopping everything before it runs, a strategy that cannot run failing its own row only, and files that
// are the same bytes every time.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;

// A small MLP on 4 single-GPU nodes, 2 measured iterations: every strategy runs in a fraction of a second.
constexpr const char* kScenario = R"({
  "version": 1,
  "name": "compare-test",
  "model": {"preset": "mlp-small", "batch_per_gpu": 32, "precision": "fp32"},
  "dataset": {"samples": 60000},
  "cluster": {"nodes": 4, "gpus_per_node": 1, "gpu": "v100", "nic": {"bandwidth": "10Gbps", "latency": "5us"}},
  "run": {"iterations": 2, "warmup_iterations": 1}
})";

const std::vector<std::string> kStrategies{"allreduce", "ps-sync", "ps-async",   "ssp:3",
                                           "gossip",    "dpsgd",   "local-sgd:8"};
const std::string kList = "allreduce,ps-sync,ps-async,ssp:3,gossip,dpsgd,local-sgd:8";

// The printed line that starts with `first` followed by a space; empty if none.
std::string line_starting(const std::string& text, const std::string& first) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(first + " ")) return line;
  return {};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string word; in >> word;)
    out.push_back(word);
  return out;
}

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

TEST(Compare, TableListsEachStrategyInTheOrderGiven) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kScenario);
  const auto inv = run_dtsim("compare " + quoted(scenario) + " --strategies " + kList + " --jobs 2", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  std::size_t previous = 0;
  for (const auto& name : kStrategies) {
    const auto at = inv.out.find("\n" + name + " ");
    ASSERT_NE(at, std::string::npos) << name << "\n" << inv.out;
    EXPECT_GT(at, previous) << name << " out of order\n" << inv.out;
    previous = at;
  }
  // Every figure's unit is in the header.
  for (const auto* unit : {"(ms)", "(samples/s)", "(ms/iteration)", "(mean/max iterations)", "(MiB/iteration)"})
    EXPECT_NE(inv.out.find(unit), std::string::npos) << unit << "\n" << inv.out;
  // Asynchronous workers each keep their own pace; the line under the table says why their throughput is no
  // measure of progress.
  EXPECT_NE(line_starting(inv.out, "ps-async").find("per worker"), std::string::npos) << inv.out;
  EXPECT_EQ(line_starting(inv.out, "allreduce").find("per worker"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("Asynchronous throughput is not progress"), std::string::npos) << inv.out;
}

TEST(Compare, SynchronousParameterServerShowsStalenessZeroAndAllReduceNone) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kScenario);
  const auto inv = run_dtsim("compare " + quoted(scenario) + " --strategies allreduce,ps-sync --jobs 2", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  // strategy, workers, iteration, throughput, exposed communication, staleness, ...
  const auto ps = words(line_starting(inv.out, "ps-sync"));
  ASSERT_GE(ps.size(), 8u) << inv.out;
  EXPECT_EQ(ps[1], "3") << inv.out; // one node serves, three train
  EXPECT_EQ(ps[5], "0.00/0") << inv.out;
  const auto allreduce = words(line_starting(inv.out, "allreduce"));
  ASSERT_GE(allreduce.size(), 8u) << inv.out;
  EXPECT_EQ(allreduce[1], "4") << inv.out;
  EXPECT_EQ(allreduce[5], "-") << inv.out; // no servers, no staleness
  // Only synchronous strategies: no caveat about asynchronous throughput.
  EXPECT_EQ(inv.out.find("not progress"), std::string::npos) << inv.out;
}

TEST(Compare, BadStrategyNameExitsTwoWritingNothing) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kScenario);
  const auto csv = dir.path() / "c.csv";
  const auto json = dir.path() / "c.json";
  const auto inv = run_dtsim("compare " + quoted(scenario) + " --strategies allreduce,gosip,ps-sync --csv " +
                                 quoted(csv) + " --json " + quoted(json),
                             dir);
  EXPECT_EQ(inv.status, 2) << inv.out;
  EXPECT_NE(inv.err.find("\"gosip\""), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("gossip[:P]"), std::string::npos) << inv.err; // the accepted forms
  EXPECT_NE(inv.err.find("--strategies"), std::string::npos) << inv.err;
  EXPECT_TRUE(inv.out.empty()) << inv.out;
  EXPECT_FALSE(fs::exists(csv));
  EXPECT_FALSE(fs::exists(json));

  for (const auto* list : {"allreduce,,ps-sync", "ssp:x", "preset:Nope"}) {
    const auto bad = run_dtsim("compare " + quoted(scenario) + " --strategies '" + list + "'", dir);
    EXPECT_EQ(bad.status, 2) << list << "\n" << bad.out;
    EXPECT_NE(bad.err.find("--strategies"), std::string::npos) << bad.err;
  }
}

TEST(Compare, CsvHasOneRowPerStrategyAndJsonOneResult) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kScenario);
  const auto csv = dir.path() / "c.csv";
  const auto json = dir.path() / "c.json";
  const auto inv = run_dtsim("compare " + quoted(scenario) + " --strategies " + kList + " --csv " + quoted(csv) +
                                 " --json " + quoted(json) + " --price-per-hour 3",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  EXPECT_NE(inv.out.find("Wrote " + csv.string()), std::string::npos) << inv.out;
  const auto rows = lines(read_file(csv));
  ASSERT_EQ(rows.size(), kStrategies.size() + 1) << read_file(csv);
  EXPECT_EQ(rows[0].rfind("strategy,strategy_name,workers,servers,asynchronous,iteration_seconds,", 0), 0u) << rows[0];
  const auto columns = std::count(rows[0].begin(), rows[0].end(), ',');
  for (std::size_t i = 0; i < kStrategies.size(); ++i) {
    EXPECT_EQ(rows[i + 1].rfind(kStrategies[i] + ",", 0), 0u) << rows[i + 1];
    EXPECT_EQ(std::count(rows[i + 1].begin(), rows[i + 1].end(), ','), columns) << rows[i + 1];
  }
  // Priced: the table shows dollars per epoch.
  EXPECT_NE(inv.out.find("(USD/epoch)"), std::string::npos) << inv.out;

  const auto results = nlohmann::json::parse(read_file(json));
  ASSERT_TRUE(results.is_array());
  ASSERT_EQ(results.size(), kStrategies.size());
  EXPECT_EQ(results[1].at("strategy").at("name"), "ps-sync");
  EXPECT_EQ(results[4].at("strategy").at("name"), "gossip:0.1"); // the canonical name of "gossip"
  EXPECT_EQ(results[1].at("scenario").at("training").at("strategy").at("kind"), "parameter-server");
  EXPECT_GT(results[0].at("cost_usd").at("per_epoch").get<double>(), 0);
}

TEST(Compare, TwoRunsWriteByteIdenticalFiles) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kScenario);
  std::string csv[2], json[2], out[2];
  for (int i = 0; i < 2; ++i) {
    const auto c = dir.path() / ("c" + std::to_string(i) + ".csv");
    const auto j = dir.path() / ("c" + std::to_string(i) + ".json");
    const auto inv = run_dtsim("compare " + quoted(scenario) + " --strategies " + kList + " --jobs " +
                                   std::to_string(i + 1) + " --csv " + quoted(c) + " --json " + quoted(j),
                               dir);
    ASSERT_EQ(inv.status, 0) << inv.err;
    csv[i] = read_file(c);
    json[i] = read_file(j);
    out[i] = inv.out.substr(0, inv.out.find("Wrote")); // the file names differ
  }
  EXPECT_FALSE(csv[0].empty());
  EXPECT_EQ(csv[0], csv[1]);
  EXPECT_EQ(json[0], json[1]);
  EXPECT_EQ(out[0], out[1]);
}

TEST(Compare, StrategyThatCannotRunFailsItsRowOnly) {
  TempDir dir;
  const auto scenario = dir.write("s.json", kScenario);
  const auto csv = dir.path() / "c.csv";
  // One node: a dedicated server would leave nobody to train.
  const auto inv = run_dtsim("compare " + quoted(scenario) +
                                 " --set cluster.nodes=1 --strategies allreduce,ps-sync,"
                                 "dpsgd --csv " +
                                 quoted(csv),
                             dir);
  // As a sweep with a point whose input cannot run: the others are printed and written, and the status is 2 (the
  // scenario does not validate with that strategy: the user's to fix, not a failed simulation).
  EXPECT_EQ(inv.status, 2) << inv.err << inv.out;
  const auto ps = line_starting(inv.out, "ps-sync");
  EXPECT_NE(ps.find("failed: "), std::string::npos) << inv.out;
  EXPECT_NE(ps.find("dedicated server"), std::string::npos) << ps;
  EXPECT_NE(ps.find("with strategy \"ps-sync\""), std::string::npos) << ps;
  EXPECT_EQ(line_starting(inv.out, "allreduce").find("failed"), std::string::npos) << inv.out;
  EXPECT_EQ(line_starting(inv.out, "dpsgd").find("failed"), std::string::npos) << inv.out;
  const auto rows = lines(read_file(csv));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2].rfind("ps-sync,,", 0), 0u) << rows[2];
  EXPECT_NE(rows[2].find("dedicated server"), std::string::npos) << rows[2];
}

} // namespace
} // namespace dtsim::testing
