// Bad scenarios: each must be reported at the exact JSON pointer with a message that says what was expected.
#include "scenario_test_util.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::error_of_text;
using test::json;
using test::minimal;
using test::patched;

TEST(BadScenario, NegativeCountReadsLikeTheDocumentedExample) {
  const auto e = error_of(patched({{"cluster", {{"nodes", -2}}}}));
  EXPECT_STREQ(e.what(), "scenarios/bad.json: /cluster/nodes: expected an integer >= 1, got -2");
  EXPECT_EQ(e.file(), "scenarios/bad.json");
  EXPECT_EQ(e.pointer(), "/cluster/nodes");
  EXPECT_EQ(e.detail(), "expected an integer >= 1, got -2");
}

// A name nested 60,000 arrays deep once overflowed the stack of the message that quotes it; nesting is bounded at
// parse time (64 levels, where a scenario needs 4), and a document at the bound still parses as far as its fields.
TEST(BadScenario, DeepNestingIsRefusedAtParseTime) {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const auto e = error_of_text(R"({"version": 1, "name": )" + deep + "}");
  std::string too_deep = "/name"; // the top object and 63 arrays are 64 levels; the 64th array is one too many
  for (int i = 0; i < 63; ++i)
    too_deep += "/0";
  EXPECT_SCENARIO_ERROR(e, too_deep, "nested more than 64 deep");
  const std::string at_bound = std::string(63, '[') + std::string(63, ']');
  EXPECT_SCENARIO_ERROR(error_of_text(R"({"version": 1, "name": )" + at_bound + "}"), "/name", "expected");
}

// Numbers beyond a double: a JSON literal is refused as it is read; a quantity finite as written but infinite in base
// units (1e300 Tbit/s in bytes/s) is refused at its pointer.
TEST(BadScenario, NumbersBeyondADoubleAreRefused) {
  const auto literal = error_of_text(R"({"version": 1, "name": "x", "cluster": {"nodes": 1e400}})");
  EXPECT_SCENARIO_ERROR(literal, "", "beyond the range of a double");
  EXPECT_TRUE(test::contains(literal.detail(), "1e400")) << literal.what();
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwidth", "1e300Tbps"}}}}}})),
                        "/cluster/nic/bandwidth", "expected a bandwidth");
}

// JSON keeps one of two equal keys, so an invalid first value would never be checked: refused with both lines.
TEST(BadScenario, DuplicateKeysAreRefusedWithBothLines) {
  const auto e = error_of_text("{\"version\": 1,\n \"cluster\": {\"nodes\": -5,\n \"nodes\": 2}}");
  EXPECT_SCENARIO_ERROR(e, "/cluster/nodes", "the key \"nodes\" is given twice in one object (line 2 and line 3)");
}

// A --set value is JSON under the file's limits; the assignment must be UTF-8 (checked when read, not when a result
// is written).
TEST(BadScenario, SetValuesObeyTheFileLimits) {
  EXPECT_SCENARIO_ERROR(error_of(minimal(), {parse_override("cluster.nodes=1e400")}), "/cluster/nodes",
                        "beyond the range of a double");
  EXPECT_SCENARIO_ERROR(error_of(minimal(), {parse_override(R"(cluster.nic={"bandwidth": "1Gbps", "bandwidth": 2})")}),
                        "/cluster/nic/bandwidth", "given twice");
  try {
    (void)parse_override("name=\xff\xfe");
    ADD_FAILURE() << "accepted bytes that are not UTF-8";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.file(), "--set");
    EXPECT_TRUE(test::contains(e.detail(), "not valid UTF-8")) << e.what();
  }
}

TEST(BadScenario, MissingRequiredField) {
  const auto gpu = error_of(patched({{"cluster", {{"gpu", nullptr}}}}));
  EXPECT_SCENARIO_ERROR(gpu, "/cluster/gpu", "missing; expected a shipped profile (");
  EXPECT_TRUE(test::contains(gpu.detail(), "\"v100\"")) << gpu.what();
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nodes", nullptr}}}})), "/cluster/nodes",
                        "missing; expected an integer >= 1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"batch_per_gpu", nullptr}}}})), "/model/batch_per_gpu",
                        "missing; expected an integer >= 1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwidth", nullptr}, {"latency", "1us"}}}}}})),
                        "/cluster/nic/bandwidth", "missing; expected a bandwidth such as");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", nullptr}}}})), "/cluster/nic", "missing");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", nullptr}})), "/cluster", "missing");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", nullptr}})), "/model", "missing");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"preset", nullptr}}}})), "/model",
                        "missing \"preset\", \"layers\", \"transformer\" or \"trace\"");
}

// The memory and attention settings (issue 5): each bad value names its pointer.
TEST(BadScenario, MemorySettings) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"zero_stage", 4}}}})), "/training/zero_stage",
                        "expected an integer >= 0 and <= 3, got 4");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"recompute", "some"}}}})), "/training/recompute",
                        "unknown recompute mode \"some\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"offload", "gpu"}}}})), "/training/offload",
                        "unknown offload mode \"gpu\"");
  // mlp-small has no transformer blocks to recompute.
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"recompute", "full"}}}})), "/training/recompute",
                        "recomputes transformer blocks, and model \"mlp-small\" has none");
  // V100 has no fused attention.
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"attention", "flash"}}}})), "/model/attention",
                        "\"flash\" needs a fused-attention kernel");
}

TEST(BadScenario, WrongType) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nodes", "four"}}}})), "/cluster/nodes",
                        "expected an integer >= 1, got \"four\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", 4}})), "/cluster", "expected an object, got 4");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"network", {{"cross_traffic", "yes"}}}})), "/network/cross_traffic",
                        "expected true or false, got \"yes\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"gpu", 100}}}})), "/cluster/gpu",
                        "expected a shipped profile (");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"name", 5}})), "/name", "expected a non-empty string, got 5");
}

TEST(BadScenario, ZeroCount) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"batch_per_gpu", 0}}}})), "/model/batch_per_gpu",
                        "expected an integer >= 1, got 0");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"run", {{"iterations", 0}}}})), "/run/iterations",
                        "expected an integer >= 1, got 0");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"run", {{"warmup_iterations", -1}}}})), "/run/warmup_iterations",
                        "expected an integer >= 0, got -1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"dataset", {{"samples", 0}}}})), "/dataset/samples",
                        "expected an integer >= 1, got 0");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"run", {{"seed", -1}}}})), "/run/seed", "expected an integer >= 0");
}

TEST(BadScenario, NonIntegralCount) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nodes", 4.5}}}})), "/cluster/nodes",
                        "expected an integer >= 1, got 4.5");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nodes", 4.0}}}})), "/cluster/nodes",
                        "got 4.0 (write whole numbers without a decimal point)");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"gpus_per_node", 1e12}}}})), "/cluster/gpus_per_node",
                        "expected an integer >= 1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nodes", 5000000000}}}})), "/cluster/nodes",
                        "expected an integer >= 1 and <= ");
}

TEST(BadScenario, UnknownKeyWithDidYouMean) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"node", 4}}}})), "/cluster/node",
                        "unknown key \"node\"; did you mean \"nodes\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"modle", 1}})), "/modle", "did you mean \"model\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwith", "1Gbps"}}}}}})), "/cluster/nic/bandwith",
                        "did you mean \"bandwidth\"?");
}

TEST(BadScenario, UnknownKeyListsKnownKeysWhenNothingIsClose) {
  const auto e = error_of(patched({{"run", {{"epochs", 3}}}}));
  EXPECT_SCENARIO_ERROR(e, "/run/epochs", "unknown key \"epochs\"; known keys: ");
  EXPECT_TRUE(test::contains(e.detail(), "\"iterations\", \"seed\", \"skip_repeats\", \"warmup_iterations\""))
      << e.what();
  // A short word is not "close" to another short word two letters away ("foo" is not "run").
  EXPECT_SCENARIO_ERROR(error_of(patched({{"foo", 1}})), "/foo",
                        "unknown key \"foo\"; known keys: \"$schema\", \"checkpoint\"");
}

TEST(BadScenario, BadUnit) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwidth", "10 parsecs"}}}}}})),
                        "/cluster/nic/bandwidth",
                        "expected a bandwidth such as \"10Gbps\" or \"25GB/s\", got \"10 parsecs\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"latency", "5 mins"}}}}}})), "/cluster/nic/latency",
                        "expected a time such as");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwidth", true}}}}}})), "/cluster/nic/bandwidth",
                        "got true");
}

TEST(BadScenario, WrongDimensionUnit) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwidth", "16GiB"}}}}}})), "/cluster/nic/bandwidth",
                        "got \"16GiB\" (that is a size, not a bandwidth)");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"bucket_size", "25Gbps"}}}})), "/training/bucket_size",
                        "(that is a bandwidth, not a size)");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"switch", {{"latency", "1MB"}}}}}})), "/cluster/switch/latency",
                        "(that is a size, not a time)");
}

TEST(BadScenario, ZeroOrNegativeQuantities) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"bandwidth", "0Gbps"}}}}}})), "/cluster/nic/bandwidth",
                        "expected a bandwidth > 0, got \"0Gbps\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"pcie", {{"bandwidth", -1}}}}}})), "/cluster/pcie/bandwidth",
                        "expected a bandwidth > 0, got -1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"nic", {{"latency", "-5us"}}}}}})), "/cluster/nic/latency",
                        "expected a time >= 0, got \"-5us\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"bucket_size", 0}}}})), "/training/bucket_size",
                        "expected a size > 0, got 0");
}

TEST(BadScenario, MalformedJsonGivesLineAndColumn) {
  const std::string text = "{\n  \"version\": 1,\n  \"name\": tru\n}";
  const auto e = error_of_text(text);
  EXPECT_SCENARIO_ERROR(e, "", "malformed JSON at line 3, column 13: ");
  EXPECT_TRUE(test::contains(e.detail(), "invalid literal")) << e.what();
  EXPECT_TRUE(test::contains(e.what(), "scenarios/bad.json: malformed JSON")) << e.what();

  EXPECT_SCENARIO_ERROR(error_of_text("{\"version\": 1,"), "", "malformed JSON at line 1, column 15: ");
  EXPECT_SCENARIO_ERROR(error_of_text("{\n  \"a\": 1\n  \"b\": 2\n}"), "", "malformed JSON at line 3, column 5: ");
  EXPECT_SCENARIO_ERROR(error_of_text(""), "", "malformed JSON at line 1, column 1: ");
}

TEST(BadScenario, TopLevelMustBeAnObject) {
  EXPECT_SCENARIO_ERROR(error_of_text("[1, 2]"), "", "expected a JSON object at the top level, got [1,2]");
}

TEST(BadScenario, UnknownPreset) {
  const auto e = error_of(patched({{"model", {{"preset", "resnet-50"}}}}));
  EXPECT_SCENARIO_ERROR(e, "/model/preset", "unknown model preset \"resnet-50\"; did you mean \"resnet50\"?");
  EXPECT_TRUE(test::contains(e.detail(), "Expected one of ")) << e.what();
  EXPECT_TRUE(test::contains(e.detail(), "\"resnet50\"")) << e.what();
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"preset", "alexnet"}}}})), "/model/preset",
                        "unknown model preset \"alexnet\"; expected one of");
}

TEST(BadScenario, UnknownGpu) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"gpu", "v10"}}}})), "/cluster/gpu",
                        "unknown GPU profile \"v10\"; did you mean \"v100\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"gpu", "V100"}}}})), "/cluster/gpu", "did you mean \"v100\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"gpu", "a100"}}}})), "/cluster/gpu",
                        "did you mean \"a100-40gb\" or \"a100-80gb\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"gpu", "tpu"}}}})), "/cluster/gpu",
                        "expected a shipped profile (");
}

TEST(BadScenario, OtherUnknownNames) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"precision", "fp62"}}}})), "/model/precision",
                        "unknown precision \"fp62\"; did you mean");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"optimizer", "adamw"}}}})), "/training/optimizer",
                        "unknown optimizer \"adamw\"; did you mean \"adam\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"strategy", "parameter_server"}}}})), "/training/strategy",
                        "unknown strategy \"parameter_server\"; expected allreduce, ps-sync, ps-async, ssp[:S]");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"algorithm", "rinng"}}}})), "/training/algorithm",
                        "unknown all-reduce algorithm \"rinng\"; did you mean \"ring\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"run", {{"fidelity", "exact"}}}})), "/run/fidelity",
                        "unknown fidelity mode \"exact\"");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"run", {{"fidelity", "coarse"}}}})), "/run/fidelity",
                        "\"coarse\" collapses tensor-parallel groups and pipeline stages; this scenario has neither");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"network", {{"model", "lv8"}}}})), "/network/model",
                        "unknown network model \"lv8\"; did you mean \"lv08\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"cluster", {{"intra_node", {{"fabric", "nvswitch"}}}}}})),
                        "/cluster/intra_node/fabric",
                        "expected one of \"nvlink\", \"hybrid-cube-mesh\", \"pcie\", \"pcie-tree\"");
}

TEST(BadScenario, PrecisionTheGpuLacks) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"precision", "fp8"}}}})), "/model/precision",
                        "GPU profile \"v100\" has no peak rate for fp8");
}

TEST(BadScenario, BadVersion) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"version", 2}})), "/version",
                        "unsupported format version 2; this dtsim reads version 1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"version", nullptr}})), "/version",
                        "missing; expected the format version, 1");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"version", "1"}})), "/version", "got \"1\"");
  // The version is checked before anything else, so a newer file is not reported as full of unknown keys.
  EXPECT_SCENARIO_ERROR(error_of(patched({{"version", 2}, {"pipeline", 1}})), "/version", "unsupported");
}

TEST(BadScenario, BothPresetAndLayers) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"layers", json::array()}}}})), "/model",
                        "both \"preset\" and \"layers\" given; give exactly one");
}

TEST(BadScenario, BadInlineLayers) {
  const json fc = {{"name", "fc"},    {"kind", "matmul"},    {"forward_flops", 10},
                   {"parameters", 1}, {"input_elements", 1}, {"output_elements", 1}};
  auto with_layers = [](const json& layers) { return patched({{"model", {{"preset", nullptr}, {"layers", layers}}}}); };
  EXPECT_SCENARIO_ERROR(error_of(with_layers(json::array())), "/model/layers", "expected a non-empty array");
  json bad_kind = fc;
  bad_kind["kind"] = "conv";
  bad_kind["name"] = "conv1";
  EXPECT_SCENARIO_ERROR(error_of(with_layers({fc, bad_kind})), "/model/layers/1/kind", "unknown layer kind \"conv\"");
  json no_flops = fc;
  no_flops.erase("forward_flops");
  no_flops["name"] = "other";
  EXPECT_SCENARIO_ERROR(error_of(with_layers({fc, no_flops})), "/model/layers/1/forward_flops",
                        "missing; expected a number >= 0");
  EXPECT_SCENARIO_ERROR(error_of(with_layers({fc, fc})), "/model/layers/1/name", "duplicate layer name \"fc\"");
  json typo = fc;
  typo["params"] = 3;
  EXPECT_SCENARIO_ERROR(error_of(with_layers(json::array({typo}))), "/model/layers/0/params", "unknown key \"params\"");
}

TEST(BadScenario, BadSetForm) {
  try {
    parse_override("cluster.nodes:8");
    FAIL() << "accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.file(), "--set");
    EXPECT_SCENARIO_ERROR(e, "", "expected path=value");
  }
}

} // namespace
} // namespace dtsim::scenario
