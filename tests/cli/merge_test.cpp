// Sharded sweep, compare, search and plan put together by dtsim merge: the same bytes as the command run whole, and the
// shards that do not add up to one run (one missing, one given twice, another command's, a point lost) or a manifest
// tampered with refused.
#include "tests/cli/cli_util.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(DTSIM_SOURCE_DIR) / "scenarios";

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

// Runs `command` whole (writing `outputs` named "whole.*") and in `shards` shards merged (writing "merged.*"); the
// two stdouts, and each output file of the two, must be the same bytes.
void expect_same_as_whole(const std::string& command, int shards, const std::vector<std::string>& outputs) {
  TempDir dir;
  const auto p = [&](const std::string& name) { return quoted(dir.path() / name); };
  std::string whole_args, merged_args;
  for (const auto& o : outputs) {
    whole_args += " --" + o + " " + p("out." + o);
  }
  const auto whole = run_dtsim(command + whole_args, dir);
  ASSERT_EQ(whole.status, 0) << whole.err;
  for (const auto& o : outputs)
    fs::rename(dir.path() / ("out." + o), dir.path() / ("whole." + o));
  std::string dirs;
  for (int k = 1; k <= shards; ++k) {
    const auto out = dir.path() / ("shard" + std::to_string(k));
    const auto shard = run_dtsim(command + " --shard " + std::to_string(k) + "/" + std::to_string(shards) + " --out " +
                                     quoted(out) + " --jobs 1",
                                 dir);
    ASSERT_EQ(shard.status, 0) << shard.err;
    EXPECT_NE(shard.out.find("put the shards together with dtsim merge"), std::string::npos) << shard.out;
    dirs += " " + quoted(out);
  }
  for (const auto& o : outputs)
    merged_args += " --" + o + " " + p("out." + o);
  const auto merged = run_dtsim("merge" + dirs + merged_args, dir);
  ASSERT_EQ(merged.status, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
  for (const auto& o : outputs)
    EXPECT_EQ(read_file(dir.path() / ("out." + o)), read_file(dir.path() / ("whole." + o))) << o;
}

// A search small enough for a test: eight 300M-parameter matmuls on one node of 4 V100s (4 candidates fit).
std::string small_search(const TempDir& dir) {
  std::string layers;
  for (int i = 0; i < 8; ++i)
    layers += (i ? "," : "") + std::string(R"({"name": "fc)") + std::to_string(i) +
              R"(", "kind": "matmul", "forward_flops": 1e6, "parameters": 300000000, "input_elements": 1024,
                 "output_elements": 1024})";
  return quoted(dir.write("search.json", R"({"version": 1, "name": "search-merge", "model": {"layers": [)" + layers +
                                             R"(], "batch_per_gpu": 2}, "cluster": {"nodes": 1, "gpus_per_node": 4,
                                             "gpu": "v100", "nic": {"bandwidth": "10Gbps"}, "price_per_hour": 36},
                                             "training": {"optimizer": "momentum"}})"));
}

// `sweep` (a command line) run as shards 1/2 and 2/2 into DIR/a and DIR/b; their directories.
std::pair<fs::path, fs::path> two_shards(const TempDir& dir, const std::string& sweep) {
  const auto a = dir.path() / "a", b = dir.path() / "b";
  EXPECT_EQ(run_dtsim(sweep + " --shard 1/2 --out " + quoted(a), dir).status, 0);
  EXPECT_EQ(run_dtsim(sweep + " --shard 2/2 --out " + quoted(b), dir).status, 0);
  return {a, b};
}

TEST(Merge, ShardedSweepCompareSearchAndPlanPrintAndWriteWhatTheWholeRunDoes) {
  expect_same_as_whole("sweep " + quoted(kScenarios / "resnet50-p3.2xlarge-sync.json") + " --nodes 1..8", 2, {"csv"});
  expect_same_as_whole("compare " + quoted(kScenarios / "strategies-16-nodes-straggler.json") +
                           " --strategies allreduce,ssp:3",
                       2, {"csv", "json"});
  // Search's --csv prints every candidate on stdout: it stays in the command, and the shards are of that command.
  const TempDir inputs;
  expect_same_as_whole("search " + small_search(inputs) + " --csv", 3, {});
  expect_same_as_whole("search " + small_search(inputs) + " --top 2", 2, {});
  // A plan's points are its chosen clusters' layouts (2 clusters x 2 here); its screen and trials run again.
  expect_same_as_whole(
      "plan " + quoted(kScenarios / "llama3-8b-pretraining-plan.json") +
          " --steps 100 --instances aws.p5.48xlarge,gcp.a3-highgpu-8g --nodes 4 --layouts 2 --trials 3",
      2, {"csv", "json"});
}

// A manifest is data merge checks, not a command it trusts: an option that would write a file (here --csv to a path
// outside the shards), a non-string word, a working directory that is not there, a shard count past the format's, or
// a command dtsim does not shard are each refused with exit 2, naming the manifest and its field, and nothing is
// written.
TEST(Merge, ATamperedManifestIsRefusedAndWritesNothing) {
  TempDir dir;
  const auto sweep = "sweep " + quoted(kScenarios / "resnet50-p3.2xlarge-sync.json") + " --nodes 1..2";
  const auto [a, b] = two_shards(dir, sweep);
  const auto manifest = nlohmann::json::parse(read_file(a / "shard.json"));
  const auto tamper = [&](const std::function<void(nlohmann::json&)>& change) {
    auto m = manifest;
    change(m);
    std::ofstream(a / "shard.json") << m.dump(2);
    return run_dtsim("merge " + quoted(a) + " " + quoted(b), dir);
  };
  auto inv = tamper([](nlohmann::json& m) {
    m["command"].push_back("--csv");
    m["command"].push_back("../escape.csv");
  });
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("shard.json: /command/"), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("\"--csv\" is not an option a shard of sweep keeps"), std::string::npos) << inv.err;
  EXPECT_FALSE(fs::exists(dir.path().parent_path() / "escape.csv"));
  inv = tamper([](nlohmann::json& m) { m["command"][1] = 7; });
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("shard.json: /command: missing or malformed"), std::string::npos) << inv.err;
  inv = tamper([&](nlohmann::json& m) { m["cwd"] = (dir.path() / "not-there").string(); });
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("shard.json: /cwd: "), std::string::npos) << inv.err;
  inv = tamper([](nlohmann::json& m) { m["shards"] = 4294967297LL; });
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("shard.json: /shards: missing or malformed"), std::string::npos) << inv.err;
  inv = tamper([](nlohmann::json& m) { m["command"][0] = "run"; });
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("\"run\" is not a command dtsim shards"), std::string::npos) << inv.err;
  // The manifest as dtsim wrote it merges.
  std::ofstream(a / "shard.json") << manifest.dump(2);
  EXPECT_EQ(run_dtsim("merge " + quoted(a) + " " + quoted(b), dir).status, 0);
  // A point file of 100 MiB (sparse: no disk spent) is no point: refused by name, not copied densely.
  const auto planted = a / "0123456789abcdef0123456789abcdef.json";
  std::ofstream(planted) << "{}";
  fs::resize_file(planted, std::uintmax_t{100} << 20);
  inv = run_dtsim("merge " + quoted(a) + " " + quoted(b), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find(planted.filename().string() + ": is larger than 64 MiB"), std::string::npos) << inv.err;
}

// Merged from another directory than the shards ran in: a relative output is written where the merge runs, and named
// by its absolute path (the command runs again in the shards' directory, from which a relative name points elsewhere).
TEST(Merge, FromAnotherDirectoryTheOutputsAreWhereTheMergeRuns) {
  TempDir dir;
  two_shards(dir, "sweep " + quoted(kScenarios / "quickstart.json") + " --nodes 1,2");
  const auto elsewhere = dir.path() / "elsewhere";
  fs::create_directories(elsewhere);
  const std::string merge = "cd " + quoted(elsewhere) + " && " + DTSIM_BINARY + " merge ../a ../b --csv out.csv > " +
                            quoted(dir.path() / "merged.txt") + " 2>&1";
  ASSERT_EQ(std::system(merge.c_str()), 0) << read_file(dir.path() / "merged.txt");
  EXPECT_TRUE(fs::exists(elsewhere / "out.csv"));
  EXPECT_NE(read_file(dir.path() / "merged.txt").find("Wrote " + (elsewhere / "out.csv").string()), std::string::npos)
      << read_file(dir.path() / "merged.txt");
}

TEST(Merge, ShardsThatAreNotOneWholeRunAreRefusedNamingWhy) {
  TempDir dir;
  const auto sweep = "sweep " + quoted(kScenarios / "resnet50-p3.2xlarge-sync.json") + " --nodes 1..4";
  const auto [a, b] = two_shards(dir, sweep);
  const auto c = dir.path() / "c";
  ASSERT_EQ(run_dtsim(sweep + " --set cluster.nodes=2 --shard 2/2 --out " + quoted(c), dir).status, 0);
  auto inv = run_dtsim("merge " + quoted(a), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("shard 2/2 is missing"), std::string::npos) << inv.err;
  inv = run_dtsim("merge " + quoted(a) + " " + quoted(a), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("shard 1/2 is given twice"), std::string::npos) << inv.err;
  inv = run_dtsim("merge " + quoted(a) + " " + quoted(c), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("a shard of another command"), std::string::npos) << inv.err;
  // A point lost from a shard's directory: the merge names it and its shard.
  for (const auto& entry : fs::directory_iterator(b))
    if (entry.path().filename() != "shard.json") {
      fs::remove(entry.path());
      break;
    }
  inv = run_dtsim("merge " + quoted(a) + " " + quoted(b), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("(shard 2/2) is in none of the directories merged"), std::string::npos) << inv.err;
  inv = run_dtsim(sweep + " --shard 3/2 --out " + quoted(a), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--shard"), std::string::npos) << inv.err;
  // An output over a shard's own file (its manifest) is refused, and the manifest kept.
  const auto manifest = read_file(a / "shard.json");
  inv = run_dtsim("merge " + quoted(a) + " " + quoted(b) + " --csv " + quoted(a / "shard.json"), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("is an input of this run"), std::string::npos) << inv.err;
  EXPECT_EQ(read_file(a / "shard.json"), manifest);
  // A refused shard creates nothing: its --out directory is not made.
  inv = run_dtsim(sweep + " --shard 3/2 --out " + quoted(dir.path() / "never"), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_FALSE(fs::exists(dir.path() / "never"));
  inv = run_dtsim(sweep + " --shard 1/2", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("needs --out DIR"), std::string::npos) << inv.err;
  // --shard's value forgotten: said of --shard, not of the directory left over.
  inv = run_dtsim(sweep + " --shard --out " + quoted(dir.path() / "s.json"), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--shard: expected K/N, such as 2/8, got \"--out\""), std::string::npos) << inv.err;
  EXPECT_FALSE(fs::exists(dir.path() / "s.json"));
  inv = run_dtsim(sweep + " --shard 1/2 --out " + quoted(a) + " --resume " + quoted(b), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("give --out alone"), std::string::npos) << inv.err;
}

} // namespace
} // namespace dtsim::testing
