// training.framework and training.clip_gradients: defaults, the presets, refusals, and the canonical form.
#include "scenario_test_util.hpp"

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::parse;
using test::patched;

TEST(Framework, AutoIsPytorchForDataParallelismAndMegatronForModelParallelism) {
  const auto ddp = parse(test::minimal());
  EXPECT_EQ(ddp.training.framework, "auto");
  EXPECT_EQ(ddp.framework.name, "pytorch-ddp");
  EXPECT_FALSE(ddp.framework.fused_dropout_add);
  EXPECT_EQ(ddp.framework.optimizer, calibration::OptimizerKernels::foreach);
  EXPECT_FALSE(ddp.clips_gradients()); // the framework's default

  const auto megatron = parse(patched({{"model", {{"preset", "gpt2"}, {"batch_per_gpu", 1}}},
                                       {"cluster", {{"nodes", 1}, {"gpus_per_node", 2}}},
                                       {"parallelism", {{"tensor", 2}}}}));
  EXPECT_EQ(megatron.framework.name, "megatron-core"); // "megatron" names the newest version
  EXPECT_TRUE(megatron.framework.fused_bias_activation);
  EXPECT_TRUE(megatron.clips_gradients()); // --clip-grad 1.0
}

TEST(Framework, GivenByNameAndClippingOverridden) {
  const auto s = parse(patched({{"training", {{"framework", "deepspeed"}, {"clip_gradients", true}}}}));
  EXPECT_EQ(s.framework.name, "deepspeed");
  EXPECT_EQ(s.framework.optimizer, calibration::OptimizerKernels::fused);
  EXPECT_TRUE(s.clips_gradients());
  // The host's costs come with the preset (calibration/frameworks/*.json).
  EXPECT_DOUBLE_EQ(s.framework.host.launch, 2.6e-6);
  EXPECT_DOUBLE_EQ(s.framework.host.python_dispatch, 3.6e-6);
}

TEST(Framework, UnknownNamesAndTypesAreRefusedWithThePointer) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"framework", "megatronlm"}}}})), "/training/framework",
                        "did you mean \"megatron\"?");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"framework", 3}}}})), "/training/framework",
                        "expected one of");
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"clip_gradients", "yes"}}}})), "/training/clip_gradients",
                        "expected true or false");
}

// "auto" and an unset clip_gradients stay as given, so a scenario given another layout (dtsim search) resolves them
// again: the same document with tensor parallelism runs Megatron's kernels and clips.
TEST(Framework, TheCanonicalFormKeepsWhatFollowsTheLayout) {
  const auto s = parse(patched(
      {{"model", {{"preset", "gpt2"}, {"batch_per_gpu", 1}}}, {"cluster", {{"nodes", 1}, {"gpus_per_node", 2}}}}));
  auto j = to_json(s);
  EXPECT_EQ(j.at("training").at("framework"), "auto");
  EXPECT_FALSE(j.at("training").contains("clip_gradients"));
  EXPECT_EQ(parse(j).framework.name, "pytorch-ddp");
  j["parallelism"] = {{"tensor", 2}};
  const auto tensor_parallel = parse(j);
  EXPECT_EQ(tensor_parallel.framework.name, "megatron-core");
  EXPECT_TRUE(tensor_parallel.clips_gradients());
  // Given, both are written back as given.
  const auto given = to_json(parse(patched({{"training", {{"framework", "deepspeed"}, {"clip_gradients", true}}}})));
  EXPECT_EQ(given.at("training").at("framework"), "deepspeed");
  EXPECT_EQ(given.at("training").at("clip_gradients"), true);
}

// A version's habits: "megatron" names the newest (Megatron-Core); Megatron-LM's versions reduce gradients after
// backward unless asked (training.overlap's default), run their own unfused attention unless the scenario names one,
// and 2021's has no distributed optimizer to shard with.
TEST(Framework, VersionsBringTheirHabits) {
  const auto core = parse(patched({{"training", {{"framework", "megatron"}}}}));
  EXPECT_EQ(core.framework.name, "megatron-core");
  EXPECT_FALSE(core.training.overlap);
  const auto ddp = parse(test::minimal());
  EXPECT_TRUE(ddp.training.overlap);
  const auto given = parse(patched({{"training", {{"framework", "megatron-2022"}, {"overlap", true}}}}));
  EXPECT_TRUE(given.training.overlap);
  const auto gpt = patched({{"model", {{"preset", "gpt2"}, {"batch_per_gpu", 1}, {"precision", "bf16"}}},
                            {"cluster", {{"nodes", 1}, {"gpus_per_node", 1}, {"gpu", "h100-sxm"}}},
                            {"training", {{"framework", "megatron-2021"}}}});
  EXPECT_EQ(parse(gpt).model.attention, AttentionKernel::plain);
  auto fused = gpt;
  fused["training"]["framework"] = "pytorch-ddp";
  EXPECT_EQ(parse(fused).model.attention, AttentionKernel::flash);
  auto named = gpt;
  named["model"]["attention"] = "flash";
  EXPECT_EQ(parse(named).model.attention, AttentionKernel::flash); // the scenario's choice stands
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"framework", "megatron-2021"}, {"zero_stage", 1}}}})),
                        "/training/zero_stage", "no distributed optimizer");
}

// Transformer Engine's attention (Megatron-Core's): cuDNN's fused kernel on a Hopper GPU whose profile rates it,
// FlashAttention-2 on an Ampere one (get_attention_backend prefers cuDNN on sm90 and newer only); a scenario that
// names cuDNN on a GPU without its rate is refused at /model/attention.
TEST(Framework, TransformerEnginePrefersCudnnOnHopper) {
  auto gpt = patched({{"model", {{"preset", "gpt2"}, {"batch_per_gpu", 1}, {"precision", "bf16"}}},
                      {"cluster", {{"nodes", 1}, {"gpus_per_node", 1}, {"gpu", "h100-sxm"}}},
                      {"training", {{"framework", "megatron-core"}}}});
  EXPECT_EQ(parse(gpt).model.attention, AttentionKernel::cudnn);
  gpt["cluster"]["gpu"] = "h200";
  EXPECT_EQ(parse(gpt).model.attention, AttentionKernel::cudnn);
  gpt["cluster"]["gpu"] = "a100-80gb";
  EXPECT_EQ(parse(gpt).model.attention, AttentionKernel::flash);
  gpt["model"]["attention"] = "cudnn";
  EXPECT_SCENARIO_ERROR(error_of(gpt), "/model/attention", "no rate for it in bf16");
  gpt["cluster"]["gpu"] = "h100-sxm";
  gpt["training"]["framework"] = "pytorch-ddp"; // named by the scenario, it stands whatever the framework's choice
  EXPECT_EQ(parse(gpt).model.attention, AttentionKernel::cudnn);
}

// DeepSpeed overlaps its reduction with backward by default under ZeRO-3 only (overlap_comm's default: stage == 3);
// at stages 0 to 2 it reduces after backward unless asked; Horovod fuses under backward; it has no ZeRO.
TEST(Framework, DeepSpeedOverlapsByDefaultUnderZeroThreeOnly) {
  for (int stage : {0, 1, 2, 3}) {
    const auto s = parse(patched({{"training", {{"framework", "deepspeed"}, {"zero_stage", stage}}}}));
    EXPECT_EQ(s.training.overlap, stage == 3) << stage;
  }
  EXPECT_TRUE(parse(patched({{"training", {{"framework", "deepspeed"}, {"overlap", true}}}})).training.overlap);
  EXPECT_TRUE(parse(patched({{"training", {{"framework", "horovod"}}}})).training.overlap);
  EXPECT_SCENARIO_ERROR(error_of(patched({{"training", {{"framework", "horovod"}, {"zero_stage", 1}}}})),
                        "/training/zero_stage", "no distributed optimizer");
}

} // namespace
} // namespace dtsim::scenario
