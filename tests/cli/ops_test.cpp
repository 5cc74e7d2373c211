// `dtsim run --ops`: rank 0's kernels of one iteration as CSV, to a file or on stdout, adding up to its compute time.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kScenarios = fs::path(DTSIM_SOURCE_DIR) / "scenarios";
const char* kHeader = "kernel,kind,shape,precision,launches_per_iteration,seconds_each,seconds_per_iteration,"
                      "host_wait_seconds_per_iteration,flops_each,bytes_each,tflop_per_second,gigabytes_per_second,"
                      "efficiency,bound,sm_clock_mhz\n";

// The fields of a CSV line whose text fields are quoted (commas inside quotes kept).
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// One V100 training ResNet-50 alone: no communication, so the iteration is its kernels and the host's waits.
TEST(Ops, TheKernelsOfASingleGpuIterationAddUpToItsCompute) {
  TempDir dir;
  const auto csv = dir.path() / "ops.csv";
  const auto json = dir.path() / "r.json";
  const auto inv = run_dtsim("run '" + (kScenarios / "resnet50-p3.2xlarge-sync.json").string() +
                                 "' --set cluster.nodes=1 --ops '" + csv.string() + "' --json '" + json.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("Wrote " + csv.string()), std::string::npos) << inv.out;
  const auto text = read_file(csv);
  ASSERT_EQ(text.rfind(kHeader, 0), 0u) << text.substr(0, 300);
  std::istringstream lines(text.substr(std::string(kHeader).size()));
  double total = 0;
  int rows = 0;
  bool saw_convolution = false;
  for (std::string line; std::getline(lines, line);) {
    const auto f = fields(line);
    ASSERT_EQ(f.size(), 15u) << line;
    total += std::stod(f[6]) + std::stod(f[7]);
    saw_convolution = saw_convolution || f[1] == "convolution";
    EXPECT_NE(f[13], "") << line;
    ++rows;
  }
  EXPECT_GT(rows, 10);
  EXPECT_TRUE(saw_convolution);
  const auto result = nlohmann::json::parse(read_file(json));
  const double compute = result.at("breakdown_seconds_per_iteration").at("compute");
  EXPECT_NEAR(total, compute, 1e-7 * compute); // the CSV's 9 digits
  ASSERT_EQ(result.at("kernels").size(), static_cast<std::size_t>(rows));
  double exact = 0;
  for (const auto& k : result.at("kernels"))
    exact += k.at("seconds_per_iteration").get<double>() + k.at("host_wait_seconds_per_iteration").get<double>();
  EXPECT_NEAR(exact, compute, 1e-12 * compute);
}

// GPT-3 1.3B at micro-batch 8 on one H100 with Megatron's fused kernels: at burst clocks its kernels would draw more
// than the 695 W the GPU holds at its limit, so every kernel ran at the clock the limit allowed (the report says
// which), and the kernels still add up to the iteration's compute.
TEST(Ops, EveryKernelShowsTheClockItsRankSustained) {
  TempDir dir;
  const auto csv = dir.path() / "ops.csv";
  const auto json = dir.path() / "r.json";
  const auto inv = run_dtsim("run '" + (kScenarios / "gpt2-h100-micro-batch-1.json").string() +
                                 "' --set model.preset=gpt3-1.3b --set model.batch_per_gpu=8 --set "
                                 "training.framework=megatron --ops '" +
                                 csv.string() + "' --json '" + json.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("at the power limit"), std::string::npos) << inv.out;
  const auto result = nlohmann::json::parse(read_file(json));
  const auto& clock = result.at("sm_clock");
  ASSERT_TRUE(clock.at("power_capped").get<bool>()) << clock.dump();
  EXPECT_GT(clock.at("burst_demand_watts").get<double>(), 695);
  const double mhz = clock.at("mhz");
  EXPECT_LT(mhz, 1980);
  EXPECT_GT(mhz, 1365); // a mix with memory-bound kernels slows less than a GEMM loop
  const auto text = read_file(csv);
  std::istringstream lines(text.substr(std::string(kHeader).size()));
  double total = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto f = fields(line);
    ASSERT_EQ(f.size(), 15u) << line;
    EXPECT_EQ(f[14], fmt::format("{:.0f}", mhz)) << line;
    total += std::stod(f[6]) + std::stod(f[7]);
  }
  const double compute = result.at("breakdown_seconds_per_iteration").at("compute");
  EXPECT_NEAR(total, compute, 1e-7 * compute);
}

TEST(Ops, ADashWritesTheTableOnStdoutAndTheReportOnStderr) {
  TempDir dir;
  const auto inv = run_dtsim("run '" + (kScenarios / "quickstart.json").string() + "' --ops -", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_EQ(inv.out.rfind(kHeader, 0), 0u) << inv.out.substr(0, 300);
  EXPECT_NE(inv.err.find("Where the time goes"), std::string::npos) << inv.err;
  EXPECT_FALSE(fs::exists(dir.path() / "-"));
}

} // namespace
} // namespace dtsim::testing
