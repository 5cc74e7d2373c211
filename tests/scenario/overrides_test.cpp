#include "scenario_test_util.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::json;
using test::minimal;
using test::parse;
using test::patched;

std::vector<Override> set(std::initializer_list<const char*> assignments) {
  std::vector<Override> out;
  for (const char* a : assignments)
    out.push_back(parse_override(a));
  return out;
}

TEST(ParseOverride, SplitsAtTheFirstEquals) {
  const auto o = parse_override("cluster.nodes=8");
  EXPECT_EQ(o.path, "cluster.nodes");
  EXPECT_EQ(o.value, "8");
  const auto eq = parse_override("name=a=b");
  EXPECT_EQ(eq.path, "name");
  EXPECT_EQ(eq.value, "a=b");
  const auto spaced = parse_override(" run.seed = 7 ");
  EXPECT_EQ(spaced.path, "run.seed");
  EXPECT_EQ(spaced.value, "7");
  EXPECT_EQ(parse_override("description=").value, "");
}

TEST(ParseOverride, RejectsABadForm) {
  for (const char* bad : {"cluster.nodes", "=8", " =8", "cluster..nodes=8", ".nodes=8", "cluster.=8", ""}) {
    try {
      parse_override(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const ScenarioError& e) {
      EXPECT_EQ(e.file(), "--set") << bad;
      EXPECT_EQ(e.pointer(), "") << bad;
      EXPECT_TRUE(test::contains(e.what(), "--set: ")) << e.what();
    }
  }
  try {
    parse_override("cluster.nodes");
  } catch (const ScenarioError& e) {
    EXPECT_TRUE(test::contains(e.detail(), "expected path=value")) << e.what();
  }
}

TEST(Overrides, Numbers) {
  const Scenario s = parse(minimal(), set({"cluster.nodes=8", "run.seed=42", "model.batch_per_gpu=128"}));
  EXPECT_EQ(s.cluster.nodes, 8);
  EXPECT_EQ(s.run.seed, 42u);
  EXPECT_EQ(s.model.batch_per_gpu, 128);
}

TEST(Overrides, StringsQuotedOrNot) {
  const Scenario s = parse(minimal(), set({"cluster.gpu=a100-40gb", "name=\"quoted\"", "model.precision=tf32"}));
  EXPECT_EQ(s.cluster.gpu, "a100-40gb");
  EXPECT_EQ(s.gpu.name, "a100-40gb");
  EXPECT_EQ(s.name, "quoted");
  EXPECT_EQ(s.model.precision, calibration::Precision::tf32);
}

TEST(Overrides, UnitStringsAndBooleans) {
  const Scenario s = parse(minimal(), set({"cluster.nic.bandwidth=25Gbps", "cluster.nic.latency=\"2us\"",
                                           "network.cross_traffic=true", "training.bucket_size=50MB"}));
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 3.125e9);
  EXPECT_DOUBLE_EQ(s.cluster.nic.latency, 2e-6);
  EXPECT_TRUE(s.network.cross_traffic); // the cm02 default is false
  EXPECT_DOUBLE_EQ(s.training.bucket_bytes, 50e6);
}

TEST(Overrides, CreateMissingSections) {
  ASSERT_FALSE(minimal().contains("training"));
  const Scenario s = parse(minimal(), set({"training.optimizer=adam", "cluster.intra_node.fabric=pcie",
                                           "dataset.samples=1000", "cluster.switch.latency=0"}));
  EXPECT_EQ(s.training.optimizer, Optimizer::adam);
  EXPECT_EQ(s.cluster.intra_kind, topologies::IntraNodeKind::pcie);
  EXPECT_EQ(s.dataset.samples, 1000);
  EXPECT_DOUBLE_EQ(s.cluster.switch_latency, 0);
}

TEST(Overrides, JsonObjectValuesAndLaterOnesWin) {
  const Scenario s = parse(minimal(), set({"run={\"iterations\": 3}", "run.iterations=4"}));
  EXPECT_EQ(s.run.iterations, 4);
}

TEST(Overrides, ArrayIndices) {
  const json doc = patched(json::parse(R"({"model": {"preset": null, "layers": [
      {"name": "fc", "kind": "matmul", "forward_flops": 100, "parameters": 10, "input_elements": 5,
       "output_elements": 2}]}})"));
  const Scenario s = parse(doc, set({"model.layers.0.parameters=99"}));
  EXPECT_EQ(s.model.workload.layers.at(0).parameters, 99);

  const auto e = error_of(doc, set({"model.layers.3.parameters=1"}));
  EXPECT_SCENARIO_ERROR(e, "/model/layers/3", "no element \"3\" in an array of 1 elements");
  const auto named = error_of(doc, set({"model.layers.first.parameters=1"}));
  EXPECT_SCENARIO_ERROR(named, "/model/layers/first", "no element");
}

TEST(Overrides, InvalidValuesAreReportedByValidationWithTheirOrigin) {
  const auto e = error_of(minimal(), set({"cluster.nodes=-2"}));
  EXPECT_EQ(e.file(), test::kBadFile);
  EXPECT_SCENARIO_ERROR(e, "/cluster/nodes", "expected an integer >= 1, got -2 (from --set cluster.nodes=-2)");

  const auto unit = error_of(minimal(), set({"cluster.nic.bandwidth=16GiB"}));
  EXPECT_SCENARIO_ERROR(unit, "/cluster/nic/bandwidth", "that is a size, not a bandwidth");
}

TEST(Overrides, UnknownKeysAreReportedWithDidYouMean) {
  const auto e = error_of(minimal(), set({"cluster.nodez=8"}));
  EXPECT_SCENARIO_ERROR(e, "/cluster/nodez", "unknown key \"nodez\"; did you mean \"nodes\"?");
  EXPECT_TRUE(test::contains(e.detail(), "(from --set cluster.nodez=8)")) << e.what();

  const auto section = error_of(minimal(), set({"trainign.overlap=false"}));
  EXPECT_SCENARIO_ERROR(section, "/trainign", "did you mean \"training\"?");
}

TEST(Overrides, ReachIntoATransformerSpec) {
  const json bert = patched({{"model", {{"preset", nullptr}, {"transformer", {{"base", "bert-large"}}}}}});
  const Scenario s = parse(bert, set({"model.transformer.sequence=128", "model.transformer.dropout=false"}));
  EXPECT_EQ(s.model.transformer->sequence, 128);
  EXPECT_EQ(s.model.transformer->max_positions, 512); // the base's position table
  EXPECT_FALSE(s.model.transformer->dropout);
  EXPECT_EQ(s.model.workload.parameter_count(), 336'226'108);
  EXPECT_SCENARIO_ERROR(error_of(bert, set({"model.transformer.sequence=0"})), "/model/transformer/sequence",
                        "expected an integer >= 1, got 0 (from --set model.transformer.sequence=0)");
  EXPECT_SCENARIO_ERROR(error_of(bert, set({"model.transformer.heads=7"})), "/model/transformer",
                        "hidden 1024 is not a multiple of heads 7");
}

TEST(Overrides, PathThroughANonObject) {
  const auto e = error_of(minimal(), set({"cluster.nodes.count=8"}));
  EXPECT_SCENARIO_ERROR(e, "/cluster/nodes", "cannot set \"count\" inside 2: not an object");
}

} // namespace
} // namespace dtsim::scenario
