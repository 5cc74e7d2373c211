// The "parallelism" section: the grid, the batch, the schedule, the placement and the routing, and every refusal
// naming its field.
#include "tests/scenario/scenario_test_util.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::json;
using test::parse;

// GPT-3 125M (12 blocks, 12 heads) on 2 nodes of 4 V100.
json gpt(const json& parallelism) {
  json doc = test::minimal();
  doc["model"] = {{"preset", "gpt3-125m"}, {"batch_per_gpu", 2}, {"precision", "fp16"}};
  doc["cluster"]["gpus_per_node"] = 4;
  doc["parallelism"] = parallelism;
  return doc;
}

TEST(Parallelism, ResolvesTheGridAndTheBatch) {
  const auto s = parse(gpt({{"tensor", 2}, {"pipeline", 2}, {"global_batch", 32}}));
  EXPECT_EQ(s.parallelism.data, 2);          // 8 GPUs / (2 x 2)
  EXPECT_EQ(s.parallelism.micro_batches, 8); // 32 / (micro-batch 2 x 2 replicas)
  EXPECT_EQ(s.global_batch(), 32);
  EXPECT_EQ(s.parallelism.schedule, PipelineSchedule::one_f_one_b);
  EXPECT_EQ(s.parallelism.order, (std::vector<std::string>{"tp", "ep", "dp", "pp"}));
  // The canonical form reads back to the same section.
  const auto again = parse_scenario(to_json(s).dump(), "again.json");
  EXPECT_EQ(again.parallelism.micro_batches, 8);
  EXPECT_EQ(again.parallelism.data, 2);
}

TEST(Parallelism, RefusesWhatCannotBeBuilt) {
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"tensor", 3}})), "/parallelism/tensor", "must divide the cluster's 8 GPUs");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"tensor", 8}})), "/parallelism/tensor", "must divide the model's 12 attention");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"global_batch", 30}})), "/parallelism/global_batch",
                        "multiple of the micro-batch");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"data", 3}})), "/parallelism/data",
                        "leave 4 data-parallel replicas");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"expert", 2}})), "/parallelism/expert", "has no expert layers");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"order", "tp-cp-dp-pp"}})), "/parallelism/order", "each once");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"order", "tp-dp-pp"}})), "/parallelism/order", "each once");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 4}, {"schedule", "interleaved"}, {"micro_batches", 6}})),
                        "/parallelism/schedule", "multiple of the pipeline stages");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"virtual_stages", 2}})), "/parallelism/virtual_stages",
                        "interleaved");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"stages", {5, 5}}})), "/parallelism/stages",
                        "add up to 10; model \"gpt3-125m\" has 12 blocks");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"micro_batches", 4}})), "/parallelism/micro_batches",
                        "training.strategy.accumulation");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"pipeline", 2}, {"routing", {{"parameter", 1.5}}}})),
                        "/parallelism/routing/parameter", "uniform routing takes no parameter");
  auto zero3 = gpt({{"pipeline", 2}});
  zero3["training"] = {{"zero_stage", 3}};
  EXPECT_SCENARIO_ERROR(error_of(zero3), "/training", "zero_stage 3");
  auto experts = gpt({});
  experts["model"] = {{"transformer", {{"base", "mixtral-8x7b"}, {"layers", 2}}}, {"batch_per_gpu", 1}};
  experts["parallelism"] = {{"expert", 2}};
  experts["training"] = {{"zero_stage", 3}};
  EXPECT_SCENARIO_ERROR(error_of(experts), "/training", "zero_stage 3 with expert parallelism");
  auto plain = test::minimal();
  plain["model"] = {{"preset", "resnet50"}, {"batch_per_gpu", 2}};
  plain["parallelism"] = {{"tensor", 2}};
  EXPECT_SCENARIO_ERROR(error_of(plain), "/parallelism/tensor", "no op tensor parallelism splits");
}

} // namespace
} // namespace dtsim::scenario

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::json;
using test::parse;

json gpt_overlap(const json& overlap, const json& training = json::object()) {
  json doc = gpt({{"tensor", 2}, {"sequence_parallel", true}, {"overlap", overlap}});
  if (!training.empty()) doc["training"] = training;
  return doc;
}

// Megatron-LM's defaults: nothing overlapped, unless ZeRO-3 (whose units always overlap) or training.overlap says so.
TEST(ParallelismOverlap, DefaultsAreMegatronLms) {
  const auto plain = parse(gpt_overlap(json::object()));
  EXPECT_FALSE(plain.parallelism.overlap.tensor);
  EXPECT_FALSE(plain.parallelism.overlap.grad_reduce);
  EXPECT_FALSE(plain.parallelism.overlap.param_gather);
  EXPECT_TRUE(parse(gpt_overlap(json::object(), {{"overlap", true}})).parallelism.overlap.grad_reduce);
  EXPECT_TRUE(parse(gpt_overlap(json::object(), {{"zero_stage", 3}})).parallelism.overlap.grad_reduce);
  const auto all =
      parse(gpt_overlap({{"tensor", true}, {"grad_reduce", true}, {"param_gather", true}}, {{"zero_stage", 1}}));
  EXPECT_TRUE(all.parallelism.overlap.tensor && all.parallelism.overlap.param_gather);
  // The canonical form reads back to the same switches.
  const auto again = parse_scenario(to_json(all).dump(), "again.json");
  EXPECT_TRUE(again.parallelism.overlap.tensor && again.parallelism.overlap.grad_reduce &&
              again.parallelism.overlap.param_gather);
}

TEST(ParallelismOverlap, RefusesWhatMegatronCannotOverlap) {
  auto no_sp = gpt_overlap({{"tensor", true}});
  no_sp["parallelism"]["sequence_parallel"] = false;
  EXPECT_SCENARIO_ERROR(error_of(no_sp), "/parallelism/overlap", "only under sequence parallelism");
  EXPECT_SCENARIO_ERROR(error_of(gpt_overlap({{"param_gather", true}, {"grad_reduce", true}})),
                        "/parallelism/overlap/param_gather", "distributed optimizer");
  EXPECT_SCENARIO_ERROR(error_of(gpt_overlap({{"param_gather", true}}, {{"zero_stage", 1}})),
                        "/parallelism/overlap/param_gather", "grad_reduce overlapped too");
  EXPECT_SCENARIO_ERROR(error_of(gpt_overlap({{"grad_reduce", true}}, {{"overlap", false}})),
                        "/parallelism/overlap/grad_reduce", "training.overlap is false");
  EXPECT_SCENARIO_ERROR(error_of(gpt_overlap({{"grad_reduce", false}}, {{"zero_stage", 3}})),
                        "/parallelism/overlap/grad_reduce", "ZeRO-3");
  EXPECT_SCENARIO_ERROR(error_of(gpt_overlap({{"gradients", true}})), "/parallelism/overlap/gradients", "unknown key");
}

// Pipeline sends overlap compute by default where the version does so (Megatron-Core under the interleaved schedule
// with virtual stages), never under 1F1B, and not in Megatron-LM 2021 or 2022, which predate the option.
TEST(ParallelismOverlap, PipelineSendsFollowTheFrameworkVersion) {
  const auto pipeline = [](const std::string& framework, const std::string& schedule, const json& overlap) {
    json doc = gpt({{"tensor", 2},
                    {"pipeline", 2},
                    {"micro_batches", 4},
                    {"schedule", schedule},
                    {"virtual_stages", schedule == "interleaved" ? 2 : 1},
                    {"overlap", overlap}});
    doc["training"] = {{"framework", framework}};
    return doc;
  };
  EXPECT_TRUE(parse(pipeline("megatron-core", "interleaved", json::object())).parallelism.overlap.p2p);
  EXPECT_FALSE(parse(pipeline("megatron-core", "1f1b", json::object())).parallelism.overlap.p2p);
  EXPECT_FALSE(parse(pipeline("megatron-2022", "interleaved", json::object())).parallelism.overlap.p2p);
  const auto off = parse(pipeline("megatron-core", "interleaved", {{"p2p", false}}));
  EXPECT_FALSE(off.parallelism.overlap.p2p);
  EXPECT_FALSE(parse_scenario(to_json(off).dump(), "again.json").parallelism.overlap.p2p); // as given, not the default
  // Megatron-LM 2021 had no such option (it came in 2023): asking for it is refused, naming the version.
  EXPECT_SCENARIO_ERROR(error_of(pipeline("megatron-2021", "interleaved", {{"p2p", true}})), "/parallelism/overlap/p2p",
                        "Megatron-LM 2021 (v2.5, Narayanan et al. SC'21) waits for each pipeline send");
  EXPECT_SCENARIO_ERROR(error_of(pipeline("megatron-core", "1f1b", {{"p2p", true}})), "/parallelism/overlap/p2p",
                        "Megatron-Core 2024 (Megatron-LM core_v0.5 to 0.9, Transformer Engine) overlaps a pipeline's "
                        "sends with compute only under the interleaved schedule");
}

} // namespace
} // namespace dtsim::scenario

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::json;
using test::parse;

// 8 GPUs over tensor 2 x context 2 leave 2 data-parallel replicas; the canonical form keeps the context fields.
TEST(ContextParallelism, ResolvesTheGridAndReadsBack) {
  const auto s = parse(gpt({{"tensor", 2}, {"context", 2}, {"context_comm", "a2a"}}));
  EXPECT_EQ(s.parallelism.data, 2);
  EXPECT_EQ(s.parallelism.context, 2);
  EXPECT_EQ(s.parallelism.context_comm, ContextComm::a2a);
  EXPECT_TRUE(s.parallelism.model_parallel());
  const auto again = parse_scenario(to_json(s).dump(), "again.json");
  EXPECT_EQ(again.parallelism.context, 2);
  EXPECT_EQ(again.parallelism.context_comm, ContextComm::a2a);
  EXPECT_EQ(parse(gpt({{"context", 2}, {"order", "tp-cp-ep-dp-pp"}})).parallelism.order.size(), 5u);
}

TEST(ContextParallelism, RefusesWhatCannotBeSplit) {
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"context", 3}})), "/parallelism/context", "must divide the cluster");
  // GPT-3 125M's 2048-token sequence in 2 x 8 chunks divides; its 12 heads over tensor 2 x context 4 do not.
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"tensor", 2}, {"context", 4}, {"context_comm", "a2a"}})),
                        "/parallelism/context_comm", "must divide the 12 attention heads");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"context_comm", "a2a"}})), "/parallelism/context_comm", "needs context > 1");
  EXPECT_SCENARIO_ERROR(error_of(gpt({{"context", 2}, {"context_comm", "ring"}})), "/parallelism/context_comm", "p2p");
  auto odd = gpt({{"context", 8}});
  odd["model"] = {{"transformer", {{"base", "gpt3-125m"}, {"sequence", 1000}}}, {"batch_per_gpu", 2}};
  EXPECT_SCENARIO_ERROR(error_of(odd), "/parallelism/context", "must divide the sequence of 1000 tokens");
}

} // namespace
} // namespace dtsim::scenario
