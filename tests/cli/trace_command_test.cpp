// `dtsim run --trace` as a user runs it: the filters, gzip output, and bad filters refused before anything runs.
#include "cli_util.hpp"
#include "io/gzip.hpp"
#include "sim/graph/execution_graph.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace {

using namespace dtsim::testing;
using nlohmann::json;

const std::string kQuickstart = "'" + std::string(DTSIM_SOURCE_DIR) + "/scenarios/quickstart.json'";

TEST(TraceCommand, GzipHoldsTheSameTraceAndFiltersKeepTheirRanksAndIterations) {
  TempDir dir;
  const auto plain = dir.path() / "t.json", packed = dir.path() / "t.json.gz";
  const std::string filters = " --trace-ranks 1-2 --trace-iterations 2,4";
  ASSERT_EQ(run_dtsim("run " + kQuickstart + " --trace '" + plain.string() + "'" + filters, dir).status, 0);
  const auto inv = run_dtsim("run " + kQuickstart + " --trace '" + packed.string() + "'" + filters, dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto text = read_file(plain);
  const auto compressed = read_file(packed);
  EXPECT_LT(compressed.size(), text.size() / 4);
  EXPECT_EQ(dtsim::io::gunzip(compressed), text); // the same bytes, and the same every run (no time in the header)
  const auto trace = json::parse(text);
  std::set<int> ranks, iterations, processes;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ranks.insert(e["tid"].get<int>() / dtsim::graph::kStreamCount); // a thread per stream of each GPU
    iterations.insert(e["args"]["iteration"].get<int>());
    processes.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(ranks, (std::set<int>{1, 2}));
  EXPECT_EQ(iterations, (std::set<int>{2, 4}));
  EXPECT_EQ(processes, (std::set<int>{1, 2})); // one GPU per node: rank r on node r
}

TEST(TraceCommand, FiltersOutsideTheRunAreRefused) {
  TempDir dir;
  const auto out = dir.path() / "t.json";
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{{"--trace-ranks", "4"},
                                                                                    {"--trace-ranks", "2-1"},
                                                                                    {"--trace-ranks", "a"},
                                                                                    {"--trace-iterations", "6"},
                                                                                    {"--trace-iterations", "-1"}}) {
    const auto inv = run_dtsim("run " + kQuickstart + " --trace '" + out.string() + "' " + flag + " " + value, dir);
    EXPECT_EQ(inv.status, 2) << flag << " " << value;
    EXPECT_NE(inv.err.find(flag), std::string::npos) << inv.err;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

// The trace names what made it, as --json's provenance does: dtsim's version and commit, the scenario and its hash.
// Quickstart's 4 GPUs are under the default limit of 64, so all are kept and no note is printed; --trace-ranks all
// keeps them too, and a large job's sampling is report::traced_ranks's (tests/sim/trace_test.cpp).
TEST(TraceCommand, TheTraceSaysWhatMadeIt) {
  TempDir dir;
  const auto trace_path = dir.path() / "t.json", json_path = dir.path() / "r.json";
  const auto inv = run_dtsim(
      "run " + kQuickstart + " --trace '" + trace_path.string() + "' --json '" + json_path.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_EQ(inv.err.find("note: the trace keeps"), std::string::npos) << inv.err;
  const auto about = json::parse(read_file(trace_path))["otherData"];
  const auto provenance = json::parse(read_file(json_path))["provenance"];
  EXPECT_EQ(about["scenario"], "quickstart");
  EXPECT_EQ(about["dtsim_version"], provenance["dtsim_version"]);
  EXPECT_EQ(about["git_commit"], provenance["git_commit"]);
  EXPECT_EQ(about["scenario_hash"], provenance["scenario_hash"]);
  EXPECT_EQ(about["ranks_simulated"], 4);
  EXPECT_EQ(about["ranks_traced"], 4);
  const auto all = run_dtsim("run " + kQuickstart + " --trace-ranks all --trace '" + trace_path.string() + "'", dir);
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(json::parse(read_file(trace_path))["otherData"]["ranks_traced"], 4);
}

} // namespace
