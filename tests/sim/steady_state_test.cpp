// Skipping iterations that repeat changes nothing in a run's report but how many iterations were replayed: shipped
// scenarios of each kind, run with and without it, agree figure for figure to the check's tolerance (1e-7 of an
// iteration, a few times over for figures summed over iterations).
#include "sim/report/result.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>

namespace dtsim {
namespace {

using nlohmann::json;

// Figures to 1e-6 of their size, or of the iteration for tiny ones (the ring's idle nanoseconds are differences of
// large times, each known to the check's tolerance).
void expect_close(const json& skipped, const json& full, const std::string& path, double iteration) {
  if (full.is_object()) {
    for (const auto& [key, value] : full.items())
      if (key != "iterations" || path != "") expect_close(skipped.at(key), value, path + "/" + key, iteration);
  } else if (full.is_array()) {
    ASSERT_EQ(skipped.size(), full.size()) << path;
    for (std::size_t i = 0; i < full.size(); ++i)
      expect_close(skipped[i], full[i], path + "/" + std::to_string(i), iteration);
  } else if (full.is_number_float()) {
    const double a = skipped.get<double>(), b = full.get<double>();
    EXPECT_NEAR(a, b, 1e-6 * std::max(std::abs(b), iteration)) << path;
  } else {
    EXPECT_EQ(skipped, full) << path;
  }
}

struct Case {
  const char* file;
  std::vector<scenario::Override> overrides;
};

class SteadyStateRun : public ::testing::TestWithParam<Case> {};

TEST_P(SteadyStateRun, SkippingRepeatsChangesNoFigure) {
  const std::string path = std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + GetParam().file;
  auto overrides = GetParam().overrides;
  overrides.push_back({"run.iterations", "8"});
  const auto skipped = simulate(scenario::load_scenario(path, overrides)).result;
  overrides.push_back({"run.skip_repeats", "false"});
  const auto full = simulate(scenario::load_scenario(path, overrides)).result;
  EXPECT_LT(skipped.replayed_iterations, skipped.total_iterations);
  EXPECT_EQ(full.replayed_iterations, full.total_iterations);
  auto a = report::to_json(skipped), b = report::to_json(full);
  b["scenario"]["run"].erase("skip_repeats");
  expect_close(a, b, "", full.iteration.mean);
}

INSTANTIATE_TEST_SUITE_P(
    Shipped, SteadyStateRun,
    // The data-parallel cases with identical GPUs: where GPUs differ (the default), a ring's ranks reach each
    // all-reduce at offsets that alternate from one iteration to the next and settle over tens of iterations (0.07% of
    // ResNet-50's on 4 p3.16xlarge), so those replays run to the end.
    ::testing::Values(Case{"resnet50-p3.2xlarge-sync.json",
                           {{"cluster.nodes", "64"}, {"stragglers.gpu_speed_sigma", "0"}}}, // aggregate, a 64-rank ring
                      Case{"resnet50-p3.16xlarge-x4.json",
                           {{"stragglers.gpu_speed_sigma", "0"}}}, // step, 8 GPUs a node sharing the NIC
                      Case{"gpt2-1.5b-gpipe-v100x16.json", {}},    // GPipe's pipeline
                      Case{"gpt2-p4d.24xlarge-x2.json", {}}),      // tensor and pipeline parallel on NVSwitch nodes
    [](const auto& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find(".json"));
      for (auto& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

} // namespace
} // namespace dtsim
