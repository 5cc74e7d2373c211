// model.transformer: a published configuration with changes, or a full spec, read into models::TransformerSpec.
#include "models/zoo.hpp"
#include "scenario_test_util.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

using test::error_of;
using test::json;
using test::parse;
using test::patched;

json with_transformer(const json& transformer) {
  return patched({{"model", {{"preset", nullptr}, {"transformer", transformer}}}});
}

double forward_flops_of(const models::Workload& w, models::LayerKind kind) {
  double flops = 0;
  for (const auto& l : w.layers)
    if (l.kind == kind) flops += l.forward_flops;
  return flops;
}

TEST(TransformerSpec, ABaseAloneIsItsPreset) {
  for (const auto& name : models::transformer_spec_names()) {
    const Scenario s = parse(with_transformer({{"base", name}}));
    const auto preset = models::build_preset(name);
    ASSERT_TRUE(preset) << name;
    EXPECT_EQ(s.model.preset, "") << name;
    ASSERT_TRUE(s.model.transformer) << name;
    EXPECT_EQ(s.model.workload.name, name);
    EXPECT_EQ(s.model.workload.layers.size(), preset->layers.size()) << name;
    EXPECT_EQ(s.model.workload.parameter_count(), preset->parameter_count()) << name;
    EXPECT_EQ(s.model.workload.forward_flops_per_sample(), preset->forward_flops_per_sample()) << name;
    EXPECT_EQ(s.model.workload.backward_flops_per_sample(), preset->backward_flops_per_sample()) << name;
  }
}

// BERT-large's matmul FLOPs of one sample by hand (forward, 2 m n k each): per block the QKV (h -> 3h), output
// (h -> h), up (h -> f) and down (f -> h) projections of s tokens; the MLM transform (h -> h) and the tied decoder
// (h -> V) of s tokens; the pooler (h -> h) and next-sentence classifier (h -> 2) of the [CLS] token alone.
double bert_large_matmul_flops(double s) {
  const double l = 24, h = 1024, f = 4096, v = 30522;
  const double per_token = l * 2 * (3 * h * h + h * h + h * f + f * h) + 2 * h * h + 2 * h * v;
  return s * per_token + 2 * h * h + 2 * h * 2;
}

TEST(TransformerSpec, BertLargeAtSequence128KeepsItsParametersAndScalesItsFlops) {
  const Scenario s = parse(with_transformer({{"base", "bert-large"}, {"sequence", 128}}));
  const auto preset = *models::build_preset("bert-large");
  const auto& w = s.model.workload;
  // The position table keeps BERT's 512 rows: the same 336,226,108 parameters.
  EXPECT_EQ(s.model.transformer->sequence, 128);
  EXPECT_EQ(s.model.transformer->max_positions, 512);
  EXPECT_EQ(w.parameter_count(), preset.parameter_count());
  EXPECT_EQ(w.parameter_count(), 336'226'108);
  EXPECT_EQ(w.name, "bert-large");

  const double matmul128 = forward_flops_of(w, models::LayerKind::matmul);
  const double matmul512 = forward_flops_of(preset, models::LayerKind::matmul);
  EXPECT_DOUBLE_EQ(matmul128, bert_large_matmul_flops(128));
  EXPECT_DOUBLE_EQ(matmul512, bert_large_matmul_flops(512));
  // Every matmul but the two on the [CLS] token runs on 128 / 512 of the tokens.
  const double cls = 2.0 * 1024 * 1024 + 2.0 * 1024 * 2;
  EXPECT_DOUBLE_EQ(matmul128 - cls, (matmul512 - cls) * 128 / 512);
  // The attention cores (Q K^T and P V: 2 x 2 s^2 h per block) shrink with the square of the sequence.
  EXPECT_DOUBLE_EQ(forward_flops_of(w, models::LayerKind::attention), 24 * 4.0 * 128 * 128 * 1024);
  EXPECT_DOUBLE_EQ(forward_flops_of(w, models::LayerKind::attention),
                   forward_flops_of(preset, models::LayerKind::attention) / 16);
  // Matmuls and attention cores are all but a sliver of the sample's FLOPs.
  const double matmul_and_attention = matmul128 + forward_flops_of(w, models::LayerKind::attention);
  EXPECT_GT(matmul_and_attention / w.forward_flops_per_sample(), 0.99);
  EXPECT_LT(w.forward_flops_per_sample(), 0.26 * preset.forward_flops_per_sample());
}

TEST(TransformerSpec, ALongerContextGrowsALearnedPositionTableUnlessItIsGiven) {
  const Scenario s = parse(with_transformer({{"base", "gpt3-125m"}, {"sequence", 4096}}));
  EXPECT_EQ(s.model.transformer->max_positions, 4096);
  const std::int64_t grown = (4096 - 2048) * 768;
  EXPECT_EQ(s.model.workload.parameter_count(), models::build_preset("gpt3-125m")->parameter_count() + grown);
  EXPECT_SCENARIO_ERROR(
      error_of(with_transformer({{"base", "gpt3-125m"}, {"sequence", 4096}, {"max_positions", 2048}})),
      "/model/transformer", "max_positions 2048 is shorter than the sequence");
  // Rotary positions have no table to grow.
  const Scenario llama = parse(with_transformer({{"base", "llama2-7b"}, {"sequence", 8192}}));
  EXPECT_EQ(llama.model.workload.parameter_count(), models::build_preset("llama2-7b")->parameter_count());
}

TEST(TransformerSpec, AFullSpecOfGpt2IsTheGpt2Preset) {
  const Scenario s = parse(with_transformer({{"layers", 12},
                                             {"hidden", 768},
                                             {"heads", 12},
                                             {"ffn_hidden", 3072},
                                             {"sequence", 1024},
                                             {"vocabulary", 50257}}));
  EXPECT_EQ(s.model.workload.parameter_count(), 124'439'808);
  const auto gpt2 = *models::build_preset("gpt2");
  EXPECT_EQ(s.model.workload.forward_flops_per_sample(), gpt2.forward_flops_per_sample());
  EXPECT_EQ(s.model.workload.name, "ok"); // no base: the scenario's name
}

TEST(TransformerSpec, EveryFieldIsRead) {
  const Scenario s = parse(with_transformer(
      {{"name", "my-moe"},
       {"layers", 4},
       {"decoder_layers", 2},
       {"hidden", 512},
       {"heads", 8},
       {"kv_heads", 2},
       {"head_dim", 80},
       {"ffn_hidden", 1024},
       {"activation", "silu"},
       {"gated_ffn", true},
       {"sequence", 256},
       {"decoder_sequence", 64},
       {"vocabulary", 32000},
       {"tied_embeddings", false},
       {"positions", "relative_bias"},
       {"max_positions", 0},
       {"relative_buckets", 16},
       {"norm", "rms_norm"},
       {"biases", false},
       {"dropout", false},
       {"causal", false},
       {"post_norm", true},
       {"embedding_norm", true},
       {"final_norm", false},
       {"token_types", 2},
       {"bert_heads", false},
       {"adaptive", {{"cutoffs", {8000, 16000}}, {"factor", 2}}},
       {"moe", {{"experts", 4}, {"top_k", 2}, {"capacity_factor", 1.5}, {"ffn_hidden", 768}, {"every", 2}}}}));
  const auto& t = *s.model.transformer;
  EXPECT_EQ(t.name, "my-moe");
  EXPECT_EQ(s.model.workload.name, "my-moe");
  EXPECT_EQ(t.layers, 4);
  EXPECT_EQ(t.decoder_layers, 2);
  EXPECT_EQ(t.hidden, 512);
  EXPECT_EQ(t.heads, 8);
  EXPECT_EQ(t.kv_heads, 2);
  EXPECT_EQ(t.head_dim, 80);
  EXPECT_EQ(t.ffn_hidden, 1024);
  EXPECT_EQ(t.activation, models::Activation::silu);
  EXPECT_TRUE(t.gated_ffn);
  EXPECT_EQ(t.sequence, 256);
  EXPECT_EQ(t.decoder_sequence, 64);
  EXPECT_EQ(t.vocabulary, 32000);
  EXPECT_FALSE(t.tied_embeddings);
  EXPECT_EQ(t.positions, models::Positions::relative_bias);
  EXPECT_EQ(t.max_positions, 0);
  EXPECT_EQ(t.relative_buckets, 16);
  EXPECT_EQ(t.norm, models::Norm::rms_norm);
  EXPECT_FALSE(t.biases);
  EXPECT_FALSE(t.dropout);
  EXPECT_FALSE(t.causal);
  EXPECT_TRUE(t.post_norm);
  EXPECT_TRUE(t.embedding_norm);
  EXPECT_FALSE(t.final_norm);
  EXPECT_EQ(t.token_types, 2);
  EXPECT_FALSE(t.bert_heads);
  EXPECT_EQ(t.adaptive.cutoffs, (std::vector<std::int64_t>{8000, 16000}));
  EXPECT_EQ(t.adaptive.factor, 2);
  EXPECT_EQ(t.moe.experts, 4);
  EXPECT_EQ(t.moe.top_k, 2);
  EXPECT_DOUBLE_EQ(t.moe.capacity_factor, 1.5);
  EXPECT_EQ(t.moe.ffn_hidden, 768);
  EXPECT_EQ(t.moe.every, 2);
}

TEST(TransformerSpec, ABaseTakesChangesInItsSections) {
  const Scenario s = parse(with_transformer({{"base", "mixtral-8x7b"}, {"layers", 2}, {"moe", {{"top_k", 1}}}}));
  EXPECT_EQ(s.model.transformer->moe.experts, 8); // the base's
  EXPECT_EQ(s.model.transformer->moe.top_k, 1);
  EXPECT_EQ(s.model.transformer->layers, 2);
}

TEST(TransformerSpec, CanonicalJsonWritesTheResolvedSpecAndRoundTrips) {
  for (const auto& name : models::transformer_spec_names()) {
    const Scenario s = parse(with_transformer({{"base", name}, {"sequence", 64}}));
    const json canonical = to_json(s);
    const json& t = canonical["model"]["transformer"];
    EXPECT_FALSE(t.contains("base")) << name;
    EXPECT_EQ(t["sequence"], 64) << name;
    const Scenario again = parse_scenario(canonical.dump(), "again.json");
    EXPECT_EQ(to_json(again), canonical) << name;
    EXPECT_EQ(again.model.workload.parameter_count(), s.model.workload.parameter_count()) << name;
    EXPECT_EQ(again.model.workload.forward_flops_per_sample(), s.model.workload.forward_flops_per_sample()) << name;
    EXPECT_EQ(again.model.workload.layers.size(), s.model.workload.layers.size()) << name;
  }
}

// ---- Errors: each names the pointer ----

TEST(BadTransformerSpec, UnknownBaseSuggestsAName) {
  const auto e = error_of(with_transformer({{"base", "bert-larg"}}));
  EXPECT_SCENARIO_ERROR(e, "/model/transformer/base", "unknown transformer configuration \"bert-larg\"");
  EXPECT_TRUE(test::contains(e.detail(), "did you mean \"bert-large\"")) << e.what();
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "resnet50"}})), "/model/transformer/base",
                        "expected one of \"bert-base\"");
}

TEST(BadTransformerSpec, UnknownField) {
  const auto e = error_of(with_transformer({{"base", "gpt2"}, {"hiden", 512}}));
  EXPECT_SCENARIO_ERROR(e, "/model/transformer/hiden", "unknown key \"hiden\"; did you mean \"hidden\"?");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"moe", {{"expert", 8}}}})),
                        "/model/transformer/moe/expert", "did you mean \"experts\"?");
}

TEST(BadTransformerSpec, HeadsThatDoNotDivideHidden) {
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"heads", 7}})), "/model/transformer",
                        "gpt2: hidden 768 is not a multiple of heads 7; give head_dim");
}

TEST(BadTransformerSpec, MissingRequiredField) {
  const auto e = error_of(
      with_transformer({{"layers", 12}, {"hidden", 768}, {"heads", 12}, {"ffn_hidden", 3072}, {"sequence", 1024}}));
  EXPECT_SCENARIO_ERROR(e, "/model/transformer/vocabulary",
                        "missing; a transformer without a \"base\" needs \"layers\"");
  EXPECT_TRUE(test::contains(e.detail(), "\"layers\", \"hidden\", \"heads\", \"ffn_hidden\", \"sequence\", "
                                         "\"vocabulary\""))
      << e.what();
  EXPECT_SCENARIO_ERROR(error_of(with_transformer(json::object())), "/model/transformer/layers", "missing");
}

TEST(BadTransformerSpec, WrongValues) {
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"heads", 0}})), "/model/transformer/heads",
                        "expected an integer >= 1, got 0");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"activation", "swish"}})),
                        "/model/transformer/activation", "unknown activation \"swish\"");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"positions", "alibi"}})),
                        "/model/transformer/positions", "expected one of \"none\", \"learned\"");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"causal", "yes"}})), "/model/transformer/causal",
                        "expected true or false");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"moe", {{"capacity_factor", 0}}}})),
                        "/model/transformer/moe/capacity_factor", "expected a number > 0");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"adaptive", {{"cutoffs", {1000, "x"}}}}})),
                        "/model/transformer/adaptive/cutoffs/1", "expected an integer >= 1");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer({{"base", "gpt2"}, {"moe", {{"experts", 4}, {"top_k", 5}}}})),
                        "/model/transformer", "moe.top_k 5 must be in 1..4");
  EXPECT_SCENARIO_ERROR(error_of(with_transformer("bert-large")), "/model/transformer", "expected an object");
}

TEST(BadTransformerSpec, ExactlyOneForm) {
  EXPECT_SCENARIO_ERROR(error_of(patched({{"model", {{"transformer", {{"base", "gpt2"}}}}}})), "/model",
                        "both \"preset\" and \"transformer\" given; give exactly one");
  EXPECT_SCENARIO_ERROR(
      error_of(patched({{"model", {{"transformer", {{"base", "gpt2"}}}, {"layers", json::array()}}}})), "/model",
      "several of \"preset\", \"layers\", \"transformer\" and \"trace\" given; give exactly one");
}

} // namespace
} // namespace dtsim::scenario
