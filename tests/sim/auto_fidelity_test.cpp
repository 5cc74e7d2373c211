// run.fidelity "auto", the scenario format's default: aggregate only where no flow of one collective step meets
// another's, step everywhere else, with the reason said; and its answer is the chosen fidelity's, exactly.
#include "sim/scenario/scenario.hpp"
#include "sim/simulate.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dtsim {
namespace {

using nlohmann::json;
using scenario::Fidelity;

// ResNet-50 with DDP on four one-V100 nodes behind one switch.
json one_switch() {
  return json::parse(R"({
    "version": 1, "name": "auto",
    "model": {"preset": "resnet50", "batch_per_gpu": 32},
    "cluster": {"nodes": 4, "gpu": "v100", "nic": {"bandwidth": "10Gbps"}},
    "run": {"iterations": 2, "warmup_iterations": 1}
  })");
}

scenario::Scenario read(const json& document) {
  return scenario::parse_scenario(document.dump(), "auto.json");
}

TEST(AutoFidelity, AggregateOnlyWhereNoFlowOfAStepMeetsAnother) {
  const auto chosen = [](const json& document) {
    const auto s = read(document);
    EXPECT_TRUE(s.run.fidelity_auto);
    return std::pair{s.run.fidelity, s.run.fidelity_reason};
  };
  EXPECT_EQ(chosen(one_switch()).first, Fidelity::aggregate);
  auto doc = one_switch();
  doc["cluster"]["gpus_per_node"] = 4; // four GPUs' flows share each NIC
  EXPECT_EQ(chosen(doc).first, Fidelity::step);
  EXPECT_NE(chosen(doc).second.find("share the node's NIC"), std::string::npos);
  doc = one_switch();
  doc["cluster"]["topology"] = {{"kind", "fat-tree"}, {"k", 4}};
  EXPECT_EQ(chosen(doc).first, Fidelity::step);
  doc = one_switch();
  doc["training"] = {{"strategy", "ps-sync"}};
  EXPECT_NE(chosen(doc).second.find("other than all-reduce"), std::string::npos);
  doc = one_switch();
  doc["stragglers"] = {{"ranks", {1}}, {"slowdown", 1.5}};
  EXPECT_NE(chosen(doc).second.find("stragglers"), std::string::npos);
  doc = one_switch();
  doc["network"] = {{"model", "lv08"}, {"cross_traffic", true}};
  EXPECT_NE(chosen(doc).second.find("cross traffic"), std::string::npos);
  // A fidelity the scenario names is kept, with no reason.
  doc = one_switch();
  doc["run"]["fidelity"] = "step";
  const auto named = read(doc);
  EXPECT_FALSE(named.run.fidelity_auto);
  EXPECT_EQ(named.run.fidelity, Fidelity::step);
  EXPECT_TRUE(named.run.fidelity_reason.empty());
  // "auto" reads back from the canonical scenario as "auto".
  EXPECT_EQ(scenario::to_json(read(one_switch()))["run"]["fidelity"], "auto");
}

TEST(AutoFidelity, ItsAnswerIsTheChosenFidelitys) {
  auto aggregate = one_switch();
  aggregate["run"]["fidelity"] = "aggregate";
  auto step = one_switch();
  step["run"]["fidelity"] = "step";
  const auto by_auto = simulate(read(one_switch())).result;
  EXPECT_EQ(by_auto.iteration.mean, simulate(read(aggregate)).result.iteration.mean);
  EXPECT_EQ(by_auto.fidelity, "aggregate");
  EXPECT_NE(by_auto.fidelity_reason.find("one switch"), std::string::npos);
  // What makes aggregate the safe choice here: step replays the same iteration, to rounding.
  const double by_step = simulate(read(step)).result.iteration.mean;
  EXPECT_NEAR(by_auto.iteration.mean, by_step, 1e-9 * by_step);
}

} // namespace
} // namespace dtsim
