// Bad input, as a user meets it at the command line: exit status 2, a message naming the file, the JSON
// path and what was expected, and no output file written.
#include "cli_util.hpp"

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

// A valid scenario; each case below breaks one thing in it.
const std::string kValid = R"({
  "version": 1,
  "model": {"preset": "mlp-small", "batch_per_gpu": 16},
  "cluster": {"nodes": 2, "gpu": "v100", "nic": {"bandwidth": "10Gbps"}},
  "run": {"iterations": 1, "warmup_iterations": 0}
})";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

struct BadCase {
  std::string label;
  std::string scenario; // the file's text
  std::string extra;    // more arguments
  std::string expect_1; // both must appear in stderr
  std::string expect_2;
};

// Shown in test names and failures instead of gtest's byte dump.
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.label;
}

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, ExitsWithStatusTwoNamesTheProblemAndWritesNothing) {
  const auto& c = GetParam();
  TempDir dir;
  const auto file = dir.write("scenario.json", c.scenario);
  const auto out = dir.path() / "result.json";
  const auto trace = dir.path() / "trace.json";
  const auto inv = run_dtsim(
      "run '" + file.string() + "' --json '" + out.string() + "' --trace '" + trace.string() + "' " + c.extra, dir);
  EXPECT_EQ(inv.status, 2) << inv.err;
  EXPECT_NE(inv.err.find(c.expect_1), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find(c.expect_2), std::string::npos) << inv.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(trace));
}

const BadCase kCases[] = {
    {"missing_field", replace(kValid, R"("gpu": "v100", )", ""), "", "scenario.json", "/cluster/gpu"},
    {"wrong_type", replace(kValid, R"("nodes": 2)", R"("nodes": "four")"), "", "/cluster/nodes", "\"four\""},
    {"negative_count", replace(kValid, R"("nodes": 2)", R"("nodes": -2)"), "", "/cluster/nodes", ">= 1"},
    {"zero_count", replace(kValid, R"("batch_per_gpu": 16)", R"("batch_per_gpu": 0)"), "", "/model/batch_per_gpu",
     ">= 1"},
    {"unknown_key", replace(kValid, R"("nodes": 2)", R"("node": 2)"), "", "/cluster/node", "did you mean \"nodes\""},
    {"bad_unit", replace(kValid, "10Gbps", "10 parsecs"), "", "/cluster/nic/bandwidth", "10Gbps"},
    {"size_where_bandwidth_expected", replace(kValid, "10Gbps", "16GiB"), "", "/cluster/nic/bandwidth", "16GiB"},
    {"malformed_json", replace(kValid, R"("version": 1,)", R"("version": 1)"), "", "line 3", "column"},
    {"unknown_preset", replace(kValid, "mlp-small", "resnet5"), "", "/model/preset", "resnet50"},
    {"unknown_gpu", replace(kValid, "v100", "v101"), "", "/cluster/gpu", "v100"},
    // A name in other case is that name, before any it abbreviates ("h100-sxm", not "h100-sxm-measured").
    {"gpu_in_other_case", replace(kValid, "v100", "H100-SXM"), "", "/cluster/gpu", "did you mean \"h100-sxm\"?"},
    // A rate written as its amount: bits as Gbps, bytes as GB/s.
    {"bandwidth_as_bits", replace(kValid, "10Gbps", "100Gb"), "", "/cluster/nic/bandwidth",
     "did you mean \"100Gbps\"?"},
    {"bandwidth_as_bytes", replace(kValid, "10Gbps", "25GB"), "", "/cluster/nic/bandwidth", "did you mean \"25GB/s\"?"},
    {"bad_version", replace(kValid, R"("version": 1)", R"("version": 7)"), "", "/version", "1"},
    {"non_integral_count", replace(kValid, R"("nodes": 2)", R"("nodes": 2.5)"), "", "/cluster/nodes", "integer"},
    {"bad_set_form", kValid, "--set cluster.nodes", "--set", "="},
    {"bad_set_value", kValid, "--set cluster.nodes=0", "/cluster/nodes", ">= 1"},
    {"algorithm_the_cluster_cannot_run", kValid, "--set training.algorithm=in-switch", "in-switch",
     "cluster.switch.sharp"},
    {"unknown_set_key", kValid, "--set cluster.gpus_per_nod=2", "/cluster/gpus_per_nod", "gpus_per_node"},
};

INSTANTIATE_TEST_SUITE_P(Scenarios, BadInput, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.label; });

TEST(BadInputFiles, MissingScenarioFileIsNamed) {
  TempDir dir;
  const auto inv = run_dtsim("run '" + (dir.path() / "nope.json").string() + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("nope.json"), std::string::npos) << inv.err;
}

TEST(BadInputFiles, UnwritableOutputFailsBeforeSimulating) {
  TempDir dir;
  const auto file = dir.write("scenario.json", kValid);
  const auto inv =
      run_dtsim("run '" + file.string() + "' --json '" + (dir.path() / "no/such/dir/r.json").string() + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("not a directory"), std::string::npos) << inv.err;
  EXPECT_EQ(inv.out, "");
}

TEST(BadInputFiles, BadNodeListForSweep) {
  TempDir dir;
  const auto file = dir.write("scenario.json", kValid);
  const auto inv = run_dtsim("sweep '" + file.string() + "' --nodes 1,zero,4", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--nodes"), std::string::npos) << inv.err;
}

// dtsim plan refuses its own flags before anything runs, naming the flag: an instance that is no preset, a token count
// for a model that counts samples, a deadline that is no duration, a budget that is no amount, a run of part of an
// iteration or of more iterations than 64-bit arithmetic keeps exact, a negative seed (it used to wrap around).
TEST(BadInputFiles, PlanNamesTheFlagItRefuses) {
  TempDir dir;
  const auto file = "'" + dir.write("scenario.json", kValid).string() + "'";
  const std::pair<std::string, std::string> cases[] = {
      {"--steps 100 --instances aws.p5.48xlarge,nope.x", "--instances: unknown instance preset \"nope.x\""},
      {"--tokens 100B", "--tokens: the model counts"},
      {"--steps 100 --deadline soon", "--deadline: expected a duration"},
      {"--steps 100 --budget -5", "--budget: expected a positive amount of US dollars"},
      {"--steps 2.5", "--steps: expected a whole number of iterations"},
      {"--steps 1e20", "--steps: makes 1e+20 iterations; at most 1e+12"},
      {"--steps 100 --seed -1", "--seed: expected a whole number from 0 to 18446744073709551615, got \"-1\""}};
  for (const auto& [flags, message] : cases) {
    const auto inv = run_dtsim("plan " + file + " " + flags, dir);
    EXPECT_EQ(inv.status, 2) << flags;
    EXPECT_NE(inv.err.find(message), std::string::npos) << flags << ": " << inv.err;
    EXPECT_EQ(inv.out, "") << flags;
  }
}

// A mistyped command or option gets the closest name, where CLI11 alone says "A subcommand is required" or that
// an argument was not expected. "rn" is one edit from "run"; "--jsn" one from "--json".
TEST(BadInputFiles, MistypedCommandsAndOptionsGetTheClosestName) {
  TempDir dir;
  const auto command = run_dtsim("rn scenarios/quickstart.json", dir);
  EXPECT_EQ(command.status, 2);
  EXPECT_NE(command.err.find("unknown command \"rn\"; did you mean \"run\"?"), std::string::npos) << command.err;
  const auto kind = run_dtsim("list gpu", dir);
  EXPECT_EQ(kind.status, 2);
  EXPECT_NE(kind.err.find("cannot list \"gpu\"; expected instances, gpus"), std::string::npos) << kind.err;
  EXPECT_NE(kind.err.find("; did you mean \"gpus\"?"), std::string::npos) << kind.err;
  const auto option =
      run_dtsim("run '" + std::string(DTSIM_SOURCE_DIR) + "/scenarios/quickstart.json' --jsn x.json", dir);
  EXPECT_EQ(option.status, 2);
  EXPECT_NE(option.err.find("dtsim run has no option --jsn; did you mean \"--json\"?"), std::string::npos)
      << option.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x.json"));
}

} // namespace
} // namespace dtsim::testing
