// `--json` on every command: the figures a command prints, as data, with the provenance of the build. Each test holds
// the JSON to a relation worked out by hand or to a published figure, and `--json -` to a standard output that parses.
#include "cli_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <string>

namespace {

using namespace dtsim::testing;

using nlohmann::json;

const std::string kQuickstart = std::string(DTSIM_SOURCE_DIR) + "/scenarios/quickstart.json";

std::string arg(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

json read_json(const std::filesystem::path& p) {
  return json::parse(read_file(p));
}

void expect_provenance(const json& document, bool with_scenario) {
  ASSERT_TRUE(document.contains("provenance")) << document.dump().substr(0, 200);
  const auto& p = document["provenance"];
  EXPECT_FALSE(p["dtsim_version"].get<std::string>().empty());
  EXPECT_TRUE(p["git_commit"].is_string());
  EXPECT_EQ(p["scenario_hash"].is_string(), with_scenario);
}

TEST(JsonOutput, SweepHoldsEveryPointWithSpeedupOverTheFirst) {
  TempDir dir;
  const auto out = dir.path() / "sweep.json";
  const auto inv = run_dtsim("sweep " + arg(kQuickstart) + " --nodes 1,2,4 --jobs 2 --json " + arg(out), dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = read_json(out);
  EXPECT_EQ(d["command"], "sweep");
  expect_provenance(d, true);
  ASSERT_EQ(d["points"].size(), 3u);
  const double first = d["points"][0]["result"]["throughput_samples_per_second"];
  for (const auto& p : d["points"]) {
    ASSERT_TRUE(p["ok"].get<bool>());
    const auto& r = p["result"];
    EXPECT_EQ(r["nodes"], p["nodes"]);
    // speedup = throughput / the first point's; efficiency = speedup / (GPUs / the first point's GPUs).
    EXPECT_NEAR(p["speedup"].get<double>(), r["throughput_samples_per_second"].get<double>() / first, 1e-9);
    EXPECT_NEAR(p["efficiency"].get<double>(), p["speedup"].get<double>() / r["gpus"].get<double>(), 1e-9);
    expect_provenance(r, true);
  }
}

TEST(JsonOutput, CollectiveBusBandwidthIsTheAlgorithmBandwidthTimesTheAllReduceFactor) {
  TempDir dir;
  const auto out = dir.path() / "coll.json";
  const auto inv = run_dtsim("collective --instance aws.p4d.24xlarge --nodes 2 --algo ring --proto Simple -b 1M -e 4M "
                             "--jobs 2 --json " +
                                 arg(out),
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = read_json(out);
  EXPECT_EQ(d["command"], "collective");
  expect_provenance(d, true);
  EXPECT_EQ(d["ranks"], 16);
  ASSERT_EQ(d["points"].size(), 3u);
  double sum = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& p = d["points"][i];
    EXPECT_EQ(p["size_bytes"].get<double>(), std::ldexp(1.0, 20 + static_cast<int>(i)));
    EXPECT_EQ(p["algorithm"], "ring");
    // nccl-tests' PERFORMANCE.md: all-reduce busbw = algbw x 2(n-1)/n, and algbw = bytes / time.
    EXPECT_NEAR(p["algbw_bytes_per_second"].get<double>(),
                p["size_bytes"].get<double>() / p["time_seconds"].get<double>(),
                1e-6 * p["algbw_bytes_per_second"].get<double>());
    EXPECT_NEAR(p["busbw_bytes_per_second"].get<double>(), p["algbw_bytes_per_second"].get<double>() * 2 * 15 / 16,
                1e-6 * p["busbw_bytes_per_second"].get<double>());
    sum += p["busbw_bytes_per_second"].get<double>();
  }
  EXPECT_NEAR(d["average_busbw_bytes_per_second"].get<double>(), sum / 3, 1e-6 * sum);
  // The peaks bus bandwidth is held against (AWS's p4d.24xlarge datasheet): 4 x 100 Gbit/s EFA per node = 50 GB/s,
  // and NVLink at 300 GB/s a GPU each way; every point stays under the network's.
  EXPECT_DOUBLE_EQ(d["link_peaks_bytes_per_second"]["network"].get<double>(), 4 * 100e9 / 8);
  EXPECT_DOUBLE_EQ(d["link_peaks_bytes_per_second"]["fabric"].get<double>(), 300e9);
  for (const auto& p : d["points"])
    EXPECT_LT(p["busbw_bytes_per_second"].get<double>(), 50e9);
}

TEST(JsonOutput, ExplainGivesTheClusterInBaseUnitsAndThePath) {
  TempDir dir;
  const auto inv = run_dtsim("explain " + arg(kQuickstart) + " --path 0,3 --json -", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = json::parse(inv.out); // stdout holds the JSON alone; the text went to stderr
  EXPECT_NE(inv.err.find("quickstart: cluster"), std::string::npos);
  EXPECT_EQ(d["command"], "explain");
  expect_provenance(d, true);
  const auto& c = d["cluster"];
  EXPECT_EQ(c["nodes"], 4);
  EXPECT_EQ(c["gpus"], 4);
  // The scenario's NIC: 10 Gbit/s = 1.25e9 B/s and 5 us.
  EXPECT_DOUBLE_EQ(c["nic"]["bytes_per_second"].get<double>(), 1.25e9);
  EXPECT_DOUBLE_EQ(c["nic"]["latency_seconds"].get<double>(), 5e-6);
  EXPECT_TRUE(c["price_usd_per_node_hour"].is_null()); // no instance, no price: null, not 0
  // GPU 0 to GPU 3 on two nodes of one switch: the slowest link on the way is a NIC's.
  EXPECT_EQ(d["path"]["from"], 0);
  EXPECT_EQ(d["path"]["to"], 3);
  EXPECT_DOUBLE_EQ(d["path"]["bottleneck_bytes_per_second"].get<double>(), 1.25e9);
  double items = 0;
  for (const auto& item : d["memory_per_gpu"]["items"])
    items += item["bytes"].get<double>();
  EXPECT_DOUBLE_EQ(d["memory_per_gpu"]["total_bytes"].get<double>(), items);
}

TEST(JsonOutput, ListGivesPublishedFiguresInBaseUnits) {
  TempDir dir;
  auto inv = run_dtsim("list models --json -", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  auto d = json::parse(inv.out);
  EXPECT_EQ(d["command"], "list");
  expect_provenance(d, false);
  bool found = false;
  for (const auto& m : d["items"])
    if (m["name"] == "resnet50") {
      // torchvision's ResNet-50: 25,557,032 parameters (its model card).
      EXPECT_EQ(m["parameters"].get<double>(), 25'557'032);
      found = true;
    }
  EXPECT_TRUE(found);
  inv = run_dtsim("list gpus --json -", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  d = json::parse(inv.out);
  for (const auto& g : d["items"])
    if (g["name"] == "a100-80gb") { // NVIDIA's A100 datasheet: 312 TFLOP/s dense FP16 tensor, 19.5 FP32
      EXPECT_EQ(g["fp16_flops_per_second"].get<double>(), 312e12);
    }
  inv = run_dtsim("list instances --json -", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  for (const auto& i : json::parse(inv.out)["items"])
    if (i["name"] == "aws.p4d.24xlarge") { // AWS: 8 A100s, 4 x 100 Gbit/s EFA
      EXPECT_EQ(i["gpus"], 8);
      EXPECT_EQ(i["nics"].get<double>() * i["nic_bytes_per_second"].get<double>(), 400e9 / 8);
    }
}

TEST(JsonOutput, ListAsCsvHasARowPerItemAndTheJsonsKeysAsColumns) {
  TempDir dir;
  const auto csv = run_dtsim("list instances --csv -", dir);
  const auto json_out = run_dtsim("list instances --json -", dir);
  ASSERT_EQ(csv.status, 0) << csv.err;
  const auto items = json::parse(json_out.out)["items"];
  std::vector<std::string> lines;
  std::istringstream in(csv.out);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), items.size() + 1);
  EXPECT_EQ(lines[0].substr(0, 15), "\"display_name\","); // keys in the JSON's (sorted) order, quoted as text is
  // The p4d row: 8 GPUs, its name quoted.
  bool found = false;
  for (const auto& line : lines)
    if (line.find(",\"aws.p4d.24xlarge\",") != std::string::npos) {
      EXPECT_NE(line.find(",8,"), std::string::npos) << line;
      found = true;
    }
  EXPECT_TRUE(found) << csv.out.substr(0, 400);
}

TEST(JsonOutput, ValidateGivesEveryCaseWithItsSignedError) {
  TempDir dir;
  const auto out = dir.path() / "v.json";
  const auto inv = run_dtsim("validate --filter gemm --jobs 2 --json " + arg(out), dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = read_json(out);
  EXPECT_EQ(d["command"], "validate");
  expect_provenance(d, false);
  ASSERT_FALSE(d["cases"].empty());
  for (const auto& c : d["cases"]) {
    const double predicted = c["predicted"], measured = c["measured"];
    EXPECT_NEAR(c["error_percent"].get<double>(), 100 * (predicted - measured) / measured, 1e-9) << c["name"];
  }
}

TEST(JsonOutput, SearchListsEveryCandidateAndItsRankings) {
  TempDir dir;
  const auto out = dir.path() / "search.json";
  // 8 matmul layers of 300 M parameters on 4 V100s: tests/cli/search_test.cpp counts its 18 candidates by hand (6
  // invalid, 8 do not fit, 4 simulated).
  const std::filesystem::path file = std::string(DTSIM_SOURCE_DIR) + "/tests/data/search-small.json";
  const auto inv = run_dtsim("search " + arg(file) + " --jobs 2 --json " + arg(out), dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = read_json(out);
  EXPECT_EQ(d["command"], "search");
  EXPECT_EQ(d["counts"]["enumerated"], 18);
  EXPECT_EQ(d["counts"]["invalid"], 6);
  EXPECT_EQ(d["counts"]["do_not_fit"], 8);
  EXPECT_EQ(d["counts"]["simulated"], 4);
  ASSERT_EQ(d["candidates"].size(), 4u);
  ASSERT_EQ(d["best_by_throughput"].size(), 4u);
  double previous = INFINITY;
  for (const auto& index : d["best_by_throughput"]) { // descending throughput
    const double t = d["candidates"][index.get<std::size_t>()]["throughput_samples_per_second"];
    EXPECT_LE(t, previous);
    previous = t;
  }
  for (const auto& c : d["candidates"]) { // USD per million samples = price per hour / (samples per hour / 1e6)
    EXPECT_EQ(c["tensor"].get<int>() * c["pipeline"].get<int>() * c["data"].get<int>(), 4);
    EXPECT_NEAR(c["cost_usd_per_million_samples"].get<double>(),
                36 / (c["samples_per_second"].get<double>() * 3600 / 1e6),
                1e-6 * c["cost_usd_per_million_samples"].get<double>());
  }
}

TEST(JsonOutput, JsonOnStandardOutputMovesTheTableToStandardError) {
  TempDir dir;
  const auto inv = run_dtsim("sweep " + arg(kQuickstart) + " --nodes 1,2 --jobs 2 --json -", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_TRUE(json::accept(inv.out)) << inv.out.substr(0, 300);
  EXPECT_NE(inv.err.find("efficiency"), std::string::npos) << inv.err;
}

TEST(JsonOutput, OutputsNamingOneFileAreRefusedBeforeAnythingRuns) {
  TempDir dir;
  const auto same = dir.path() / "out.json";
  const auto inv =
      run_dtsim("sweep " + arg(kQuickstart) + " --nodes 1,2 --json " + arg(same) + " --html " + arg(same), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("is also the output"), std::string::npos) << inv.err;
  EXPECT_FALSE(std::filesystem::exists(same));
}

} // namespace
