// Framework documents (calibration/frameworks/*.json) as parse_framework reads them: the habits a document leaves out
// keep PyTorch DDP's, the ones it gives replace them, and a bad value is refused at its JSON pointer with what was
// expected.
#include "calibration/error.hpp"
#include "calibration/framework.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

namespace dtsim::calibration {
namespace {

using nlohmann::json;

json minimal() {
  return json::parse(R"({
    "name": "test", "display_name": "a test framework", "sources": ["hand-written"],
    "host": {"python_dispatch": 3.6e-6, "cpp_dispatch": 1e-6, "launch": 2.6e-6},
    "fusions": {"bias_activation": false, "dropout_add": false, "softmax": false, "layer_norm": false},
    "cross_entropy": "native", "optimizer": "foreach", "clip_gradients": false
  })");
}

std::string error_of(const json& doc) {
  try {
    parse_framework(doc.dump(), "fw.json");
  } catch (const CalibrationError& e) {
    return e.what();
  }
  return "";
}

TEST(FrameworkDocument, LeftOutHabitsArePyTorchDdps) {
  const Framework f = parse_framework(minimal().dump(), "fw.json");
  EXPECT_EQ(f.attention, AttentionImpl::fused);
  EXPECT_EQ(f.gradient_reduce, GradientReduce::as_trained);
  EXPECT_EQ(f.reduce_during_backward, ReduceDuringBackward::on);
  EXPECT_EQ(f.gradient_buffer, GradientBuffer::none);
  EXPECT_EQ(f.backward_prefetch, BackwardPrefetch::pre);
  EXPECT_TRUE(f.distributed_optimizer);
  EXPECT_TRUE(f.clip_always_scales);
  EXPECT_FALSE(f.pads_vocabulary);
  EXPECT_EQ(f.fusion_cycle, 0); // DDP's buckets
}

TEST(FrameworkDocument, GivenHabitsReplaceTheDefaults) {
  auto doc = minimal();
  doc["attention"] = "unfused";
  doc["gradient_reduce"] = "fp32";
  doc["reduce_during_backward"] = "never";
  doc["gradient_buffer"] = "always";
  doc["backward_prefetch"] = "post";
  doc["distributed_optimizer"] = false;
  doc["pads_vocabulary"] = true;
  const Framework f = parse_framework(doc.dump(), "fw.json");
  EXPECT_EQ(f.attention, AttentionImpl::unfused);
  EXPECT_EQ(f.gradient_reduce, GradientReduce::fp32);
  EXPECT_EQ(f.reduce_during_backward, ReduceDuringBackward::never);
  doc["reduce_during_backward"] = "zero3"; // DeepSpeed's: overlapped by default under ZeRO-3 only
  EXPECT_EQ(parse_framework(doc.dump(), "fw.json").reduce_during_backward, ReduceDuringBackward::zero3);
  EXPECT_EQ(f.gradient_buffer, GradientBuffer::always);
  EXPECT_EQ(f.backward_prefetch, BackwardPrefetch::post);
  EXPECT_FALSE(f.distributed_optimizer);
  EXPECT_TRUE(f.pads_vocabulary);
}

TEST(FrameworkDocument, BadHabitsAreRefusedAtTheirPointer) {
  auto doc = minimal();
  doc["backward_prefetch"] = "later";
  auto error = error_of(doc);
  EXPECT_NE(error.find("fw.json"), std::string::npos) << error;
  EXPECT_NE(error.find("/backward_prefetch"), std::string::npos) << error;
  EXPECT_NE(error.find("one of: pre, post"), std::string::npos) << error;
  doc = minimal();
  doc["pads_vocabulary"] = "yes";
  error = error_of(doc);
  EXPECT_NE(error.find("/pads_vocabulary"), std::string::npos) << error;
  EXPECT_NE(error.find("true or false"), std::string::npos) << error;
  doc = minimal();
  doc["prefetch"] = "post";
  EXPECT_NE(error_of(doc).find("prefetch"), std::string::npos);
  doc = minimal();
  doc["tensor_fusion"] = {{"cycle", 0}, {"threshold", 1024}};
  error = error_of(doc);
  EXPECT_NE(error.find("/tensor_fusion/cycle"), std::string::npos) << error;
  doc["tensor_fusion"] = {{"cycle", 1e-3}};
  EXPECT_NE(error_of(doc).find("threshold"), std::string::npos);
}

TEST(FrameworkDocument, StreamSharesAreFractionsPerOpAndDirection) {
  auto doc = minimal();
  EXPECT_DOUBLE_EQ(parse_framework(doc.dump(), "fw.json").layer_norm_share.forward, 1); // absent: streams
  doc["stream_shares"] = {{"layer_norm", {{"forward", 0.6}, {"backward", 0.7}}}};
  const Framework f = parse_framework(doc.dump(), "fw.json");
  EXPECT_DOUBLE_EQ(f.layer_norm_share.forward, 0.6);
  EXPECT_DOUBLE_EQ(f.layer_norm_share.backward, 0.7);
  EXPECT_DOUBLE_EQ(f.gated_activation_share.forward, 1);
  doc["stream_shares"]["layer_norm"]["backward"] = 1.2; // faster than a stream
  auto error = error_of(doc);
  EXPECT_NE(error.find("/stream_shares/layer_norm/backward"), std::string::npos) << error;
  EXPECT_NE(error.find("(0, 1]"), std::string::npos) << error;
  doc["stream_shares"] = {{"softmax", {{"forward", 0.5}, {"backward", 0.5}}}};
  EXPECT_NE(error_of(doc).find("/stream_shares/softmax"), std::string::npos);
  doc["stream_shares"] = {{"gated_activation", {{"forward", 0.5}}}};
  EXPECT_NE(error_of(doc).find("backward"), std::string::npos);
}

// Horovod's presets carry its fusion defaults: 128 MiB and 1 ms since v0.21.0, 64 MiB and 5 ms before.
TEST(FrameworkDocument, HorovodPresetsCarryTheirVersionsFusion) {
  const auto current = find_framework("horovod");
  ASSERT_TRUE(current);
  EXPECT_DOUBLE_EQ(current->fusion_cycle, 1e-3);
  EXPECT_DOUBLE_EQ(current->fusion_threshold, 128.0 * 1024 * 1024);
  EXPECT_FALSE(current->distributed_optimizer);
  const auto before = find_framework("horovod-0.20");
  ASSERT_TRUE(before);
  EXPECT_DOUBLE_EQ(before->fusion_cycle, 5e-3);
  EXPECT_DOUBLE_EQ(before->fusion_threshold, 64.0 * 1024 * 1024);
}

} // namespace
} // namespace dtsim::calibration
