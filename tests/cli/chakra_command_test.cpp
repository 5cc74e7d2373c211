// `dtsim export --chakra` and `model.trace` as a user runs them: a shipped scenario exported, read back as a trace on
// the same cluster, replays to the same iteration time; a bad trace is refused naming the scenario's field.
#include "cli_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace dtsim::testing;
using nlohmann::json;

std::string arg(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

// The scenario's resolved form with its model replaced by the trace (its parallelism is the trace's now, and the
// spot policy that needs a pipeline stage by stage concerns whole runs, not one iteration's replay).
std::filesystem::path trace_scenario(const TempDir& dir, json resolved, const std::filesystem::path& prefix) {
  resolved["model"] = {{"trace", {{"format", "chakra"}, {"path", prefix.string()}}},
                       {"batch_per_gpu", resolved["model"]["batch_per_gpu"]},
                       {"precision", resolved["model"]["precision"]}};
  resolved.erase("parallelism");
  resolved.erase("spot");
  return dir.write("from-trace.json", resolved.dump(2));
}

class ChakraRoundTrip : public ::testing::TestWithParam<std::string> {};

// Data parallel (hierarchical all-reduce over 4 nodes of 8 V100s), a 1F1B pipeline of 8 stages, tensor with context
// parallelism, and a PyTorch profiler trace (its kernels, host gaps and the DDP job's collectives: a PyTorch step
// handed on to Chakra's tools): each within 0.1% (the export keeps every op's exact seconds, group and algorithm).
TEST_P(ChakraRoundTrip, ExportThenImportReplaysToTheSameIteration) {
  TempDir dir;
  const std::string scenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + GetParam() + ".json";
  const auto direct = dir.path() / "direct.json";
  auto inv = run_dtsim("run '" + scenario + "' --set run.fidelity=step --json " + arg(direct), dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  inv = run_dtsim("export '" + scenario + "' --chakra " + arg(dir.path() / "et") + " --name job", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("Chakra execution trace file(s)"), std::string::npos) << inv.out;
  const auto first = json::parse(read_file(direct));
  ASSERT_TRUE(std::filesystem::exists(dir.path() / "et" / "job.0.et"));
  const auto from_trace = trace_scenario(dir, first["scenario"], dir.path() / "et" / "job");
  const auto replayed = dir.path() / "replayed.json";
  inv = run_dtsim("run " + arg(from_trace) + " --set run.fidelity=step --json " + arg(replayed), dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const double a = first["iteration_seconds"]["mean"];
  const double b = json::parse(read_file(replayed))["iteration_seconds"]["mean"];
  EXPECT_NEAR(b, a, 1e-3 * a) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Shipped, ChakraRoundTrip,
                         ::testing::Values("resnet50-p3.16xlarge-x4", "gpt2-xl-p3.2xlarge-spot-redundancy",
                                           "llama3-8b-context-parallel-h100x16", "resnet50-ddp-a100x2-pytorch-trace"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(ChakraTrace, ATraceOfAnotherSizeIsRefusedNamingTheField) {
  TempDir dir;
  const std::string quickstart = std::string(DTSIM_SOURCE_DIR) + "/scenarios/quickstart.json";
  ASSERT_EQ(run_dtsim("export '" + quickstart + "' --chakra " + arg(dir.path() / "et") + " --name q", dir).status, 0);
  const auto direct = dir.path() / "direct.json";
  ASSERT_EQ(run_dtsim("run '" + quickstart + "' --json " + arg(direct), dir).status, 0);
  auto resolved = json::parse(read_file(direct))["scenario"];
  resolved["cluster"]["nodes"] = 8; // the trace has 4 ranks
  const auto file = trace_scenario(dir, resolved, dir.path() / "et" / "q");
  const auto inv = run_dtsim("run " + arg(file), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("/model/trace/path"), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("the trace has 4 rank(s)"), std::string::npos) << inv.err;
}

TEST(ChakraTrace, StrategiesChakraCannotHoldAreRefusedOnExport) {
  TempDir dir;
  const std::string quickstart = std::string(DTSIM_SOURCE_DIR) + "/scenarios/quickstart.json";
  const auto inv =
      run_dtsim("export '" + quickstart + "' --set training.strategy=gossip --chakra " + arg(dir.path() / "et"), dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("Chakra has no node"), std::string::npos) << inv.err;
}

} // namespace
