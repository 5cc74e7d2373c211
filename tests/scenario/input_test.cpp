// The "input" section: each node's input pipeline (data loading on its CPUs, reading from storage).
#include "scenario_test_util.hpp"

#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::json;
using test::minimal;
using test::parse;
using test::patched;

json with_input(const json& input) {
  return patched({{"input", input}});
}

// One p3.2xlarge (8 vCPUs) named by its instance.
json on_instance(const json& input) {
  json doc = minimal();
  doc["cluster"] = {{"instance", "aws.p3.2xlarge"}, {"nodes", 1}};
  doc["input"] = input;
  return doc;
}

TEST(Input, AbsentMeansNoInputStage) {
  const Scenario s = parse(minimal());
  EXPECT_FALSE(s.input);
  EXPECT_FALSE(to_json(s).contains("input"));
}

TEST(Input, FieldsWithUnits) {
  const Scenario s = parse(with_input({{"cpu_cores", 8},
                                       {"samples_per_core_per_second", 110},
                                       {"sample_bytes", "110KB"},
                                       {"storage_bandwidth", "250MB/s"}}));
  ASSERT_TRUE(s.input);
  EXPECT_EQ(s.input->cpu_cores, 8);
  EXPECT_DOUBLE_EQ(s.input->samples_per_core_per_second, 110);
  EXPECT_DOUBLE_EQ(s.input->sample_bytes, 110e3);
  EXPECT_DOUBLE_EQ(s.input->storage_bandwidth, 250e6);
}

TEST(Input, CoresDefaultToTheInstancesVcpus) {
  const Scenario s = parse(on_instance({{"samples_per_core_per_second", 70}}));
  ASSERT_TRUE(s.input);
  EXPECT_EQ(s.input->cpu_cores, 8); // aws.p3.2xlarge: 8 vCPUs
  EXPECT_DOUBLE_EQ(s.input->sample_bytes, 0);
  EXPECT_DOUBLE_EQ(s.input->storage_bandwidth, 0);
  EXPECT_EQ(parse(on_instance({{"cpu_cores", 4}, {"samples_per_core_per_second", 70}})).input->cpu_cores, 4);
}

TEST(Input, CanonicalFormRoundTripsWithTheCoresResolved) {
  const json canonical = to_json(parse(on_instance({{"samples_per_core_per_second", 70}, {"sample_bytes", "110KB"}})));
  ASSERT_TRUE(canonical.contains("input"));
  EXPECT_EQ(canonical["input"]["cpu_cores"], 8);
  EXPECT_DOUBLE_EQ(canonical["input"]["sample_bytes"].get<double>(), 110e3);
  EXPECT_FALSE(canonical["input"].contains("storage_bandwidth"));
  EXPECT_EQ(to_json(parse_scenario(canonical.dump(), "again.json")), canonical);

  const json full = to_json(parse(with_input({{"cpu_cores", 2},
                                              {"samples_per_core_per_second", 1.5},
                                              {"sample_bytes", 1000},
                                              {"storage_bandwidth", "1GB/s"}})));
  EXPECT_DOUBLE_EQ(full["input"]["storage_bandwidth"].get<double>(), 1e9);
  EXPECT_EQ(to_json(parse_scenario(full.dump(), "again.json")), full);
}

TEST(Input, OverridesSetAndCreateTheSection) {
  const Scenario s = parse(on_instance({{"samples_per_core_per_second", 70}}), {parse_override("input.cpu_cores=4")});
  EXPECT_EQ(s.input->cpu_cores, 4);
  // On a scenario without the section, --set creates it.
  const Scenario t =
      parse(minimal(), {parse_override("input.cpu_cores=16"), parse_override("input.samples_per_core_per_second=100"),
                        parse_override("input.storage_bandwidth=1GB/s"), parse_override("input.sample_bytes=100KB")});
  ASSERT_TRUE(t.input);
  EXPECT_EQ(t.input->cpu_cores, 16);
  EXPECT_DOUBLE_EQ(t.input->storage_bandwidth, 1e9);
  EXPECT_DOUBLE_EQ(t.input->sample_bytes, 100e3);
}

TEST(Input, BadValuesNameTheirPointer) {
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", -4}, {"samples_per_core_per_second", 70}})),
                        "/input/cpu_cores", "expected an integer >= 1, got -4");
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", 0}, {"samples_per_core_per_second", 70}})),
                        "/input/cpu_cores", "expected an integer >= 1");
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", "eight"}, {"samples_per_core_per_second", 70}})),
                        "/input/cpu_cores", "expected an integer >= 1, got \"eight\"");
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", 8}, {"samples_per_core_per_second", 0}})),
                        "/input/samples_per_core_per_second",
                        "expected a number of samples per second > 0 (for example 70), got 0");
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", 8}, {"samples_per_core_per_second", "fast"}})),
                        "/input/samples_per_core_per_second", "got \"fast\"");
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", 8}, {"samples_per_core_per_second", -3}})),
                        "/input/samples_per_core_per_second", "> 0");
  EXPECT_SCENARIO_ERROR(
      error_of(with_input({{"cpu_cores", 8}, {"samples_per_core_per_second", 70}, {"storage_bandwidth", "10us"}})),
      "/input/storage_bandwidth", "(that is a time, not a bandwidth)");
  EXPECT_SCENARIO_ERROR(
      error_of(with_input({{"cpu_cores", 8}, {"samples_per_core_per_second", 70}, {"sample_bytes", 0}})),
      "/input/sample_bytes", "expected a size > 0");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"input", 8}})), "/input", "expected an object, got 8");
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"cpu_cores", 8}, {"samples_per_core", 70}})), "/input/samples_per_core",
                        "did you mean \"samples_per_core_per_second\"");
}

TEST(Input, MissingFieldsSayWhatIsNeeded) {
  // Without an instance nothing publishes the node's cores.
  EXPECT_SCENARIO_ERROR(error_of(with_input({{"samples_per_core_per_second", 70}})), "/input/cpu_cores",
                        "defaults to the instance's vCPUs only when cluster.instance names one");
  EXPECT_SCENARIO_ERROR(error_of(on_instance(json::object())), "/input/samples_per_core_per_second", "missing");
  EXPECT_SCENARIO_ERROR(error_of(on_instance({{"samples_per_core_per_second", 70}, {"storage_bandwidth", "1GB/s"}})),
                        "/input/storage_bandwidth", "needs \"sample_bytes\"");
}

TEST(Input, AnOverrideThatBreaksItSaysSo) {
  const auto e =
      test::error_of(on_instance({{"samples_per_core_per_second", 70}}), {parse_override("input.cpu_cores=-1")});
  EXPECT_SCENARIO_ERROR(e, "/input/cpu_cores", "(from --set input.cpu_cores=-1)");
}

} // namespace
} // namespace dtsim::scenario
