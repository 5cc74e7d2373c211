// Transformer and MoE presets against published parameter counts and Megatron-LM's FLOP formula.
#include "models/transformer.hpp"
#include "models/zoo.hpp"

#include "tests/models/workload_lookup.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace dtsim::models {
namespace {

using test::find;

Workload preset(const std::string& name) {
  return transformer(transformer_spec(name));
}

bool has(const Workload& w, const std::string& name) {
  return std::any_of(w.layers.begin(), w.layers.end(), [&](const Layer& l) { return l.name == name; });
}

// Forward + backward FLOPs of one sample's GEMMs and attention cores: what Megatron-LM's formula counts.
double gemm_and_attention_flops(const Workload& w) {
  double flops = 0;
  for (const auto& l : w.layers)
    if (l.kind == LayerKind::matmul || l.kind == LayerKind::attention) flops += l.forward_flops + l.backward_flops;
  return flops;
}

double total_flops(const Workload& w) {
  return w.forward_flops_per_sample() + w.backward_flops_per_sample();
}

// Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
// section 5.1: an iteration of batch B, sequence s, l layers, hidden h, vocabulary V costs
// F = 72 B s l h^2 (1 + s / (6h) + V / (12 l h)) FLOPs without activation recomputation (their 96 includes it).
double megatron_flops(double batch, double s, double l, double h, double v) {
  return 72 * batch * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
}

// ---- Parameter counts ----

TEST(TransformerParameters, BertMatchesHuggingFaceBertForPreTraining) {
  // Hugging Face BertModel (with the pooler) from bert-large-uncased's config: 335,141,888 parameters; the
  // pre-training heads add the MLM transform (1024 x 1024 + 1024), its LayerNorm (2 x 1024), the tied decoder's
  // bias (30,522) and the next-sentence classifier (1024 x 2 + 2): 336,226,108, Devlin et al.'s "340M".
  const Workload large = preset("bert-large");
  EXPECT_EQ(large.parameter_count(), 335'141'888 + 1'049'600 + 2'048 + 30'522 + 2'050);
  EXPECT_EQ(large.parameter_count(), 336'226'108);
  EXPECT_NEAR(static_cast<double>(large.parameter_count()), 340e6, 0.015 * 340e6); // the paper rounds up
  // Without the heads (and so without the pooler): BertModel(add_pooling_layer=False), 335,141,888 - 1,049,600.
  TransformerSpec encoder = transformer_spec("bert-large");
  encoder.bert_heads = false;
  EXPECT_EQ(transformer(encoder).parameter_count(), 334'092'288);
  // bert-base: BertModel 109,482,240 + 590,592 + 1,536 + 30,522 + 1,538.
  EXPECT_EQ(preset("bert-base").parameter_count(), 110'106'428);
}

TEST(TransformerParameters, Gpt2MatchesHuggingFace) {
  // sum(p.numel()) of Hugging Face's gpt2, gpt2-medium, gpt2-large, gpt2-xl (LM head tied to wte).
  EXPECT_EQ(preset("gpt2").parameter_count(), 124'439'808);
  EXPECT_EQ(preset("gpt2-medium").parameter_count(), 354'823'168);
  EXPECT_EQ(preset("gpt2-large").parameter_count(), 774'030'080);
  EXPECT_EQ(preset("gpt2-xl").parameter_count(), 1'557'611'200);
}

TEST(TransformerParameters, Gpt3MatchesBrownEtAlTable2Point1) {
  // 175B by hand: 12 l h^2 (weights) + 13 l h (biases, LayerNorms) + (V + s) h (token and position tables) + 2h
  // (final LayerNorm), l = 96, h = 12288, V = 50257, s = 2048.
  const std::int64_t l = 96, h = 12288;
  EXPECT_EQ(preset("gpt3-175b").parameter_count(), 12 * l * h * h + 13 * l * h + (50257 + 2048) * h + 2 * h);
  EXPECT_EQ(preset("gpt3-175b").parameter_count(), 174'604'259'328);
  // Table 2.1 rounds to two or three figures (125M, 350M, 1.3B, ...): within 2% for every size.
  const std::pair<const char*, double> published[] = {{"gpt3-125m", 125e6}, {"gpt3-350m", 350e6}, {"gpt3-1.3b", 1.3e9},
                                                      {"gpt3-2.7b", 2.7e9}, {"gpt3-6.7b", 6.7e9}, {"gpt3-13b", 13e9},
                                                      {"gpt3-175b", 175e9}};
  for (const auto& [name, count] : published)
    EXPECT_NEAR(static_cast<double>(preset(name).parameter_count()), count, 0.02 * count) << name;
}

TEST(TransformerParameters, LlamaMatchesHuggingFaceCheckpoints) {
  // Totals of the Hugging Face checkpoints (meta-llama/Llama-2-7b-hf, ...): untied LM head, no biases, RMSNorm.
  EXPECT_EQ(preset("llama2-7b").parameter_count(), 6'738'415'616);
  EXPECT_EQ(preset("llama2-13b").parameter_count(), 13'015'864'320);
  EXPECT_EQ(preset("llama2-70b").parameter_count(), 68'976'648'192);
  EXPECT_EQ(preset("llama3-8b").parameter_count(), 8'030'261'248); // "8.03B"
  EXPECT_EQ(preset("llama3-70b").parameter_count(), 70'553'706'496);
  EXPECT_EQ(preset("llama3-405b").parameter_count(), 405'853'388'800);
}

TEST(TransformerParameters, MixtralTotalAndActiveMatchMistral) {
  // Jiang et al. 2024 / Mistral AI: 46.7B parameters, 12.9B active per token (2 of 8 experts).
  const Workload w = preset("mixtral-8x7b");
  EXPECT_EQ(w.parameter_count(), 46'702'792'704);
  EXPECT_EQ(w.active_parameter_count(), 12'879'925'248);
  EXPECT_NEAR(static_cast<double>(w.parameter_count()), 46.7e9, 0.0005 * 46.7e9);
  EXPECT_NEAR(static_cast<double>(w.active_parameter_count()), 12.9e9, 0.0025 * 12.9e9);
}

TEST(TransformerParameters, SwitchBaseIsT5BasePlusExperts) {
  // Without experts the spec is T5-base: Hugging Face's t5-base has 222,903,552 parameters.
  TransformerSpec dense = transformer_spec("switch-base");
  dense.moe.experts = 0;
  EXPECT_EQ(transformer(dense).parameter_count(), 222'903'552);
  // Each of the 12 Switch layers (6 encoder, 6 decoder) turns one 768 x 3072 x 2 FFN into 128 and adds a
  // 768 x 128 router: 7,415,217,408, Fedus et al.'s "7B" Switch-Base (Table 9).
  const std::int64_t ffn = 2 * 768 * 3072;
  EXPECT_EQ(preset("switch-base").parameter_count(), 222'903'552 + 12 * (127 * ffn + 768 * 128));
  // Active: one expert per token, so the dense count plus the routers.
  EXPECT_EQ(preset("switch-base").active_parameter_count(), 222'903'552 + 12 * 768 * 128);
}

TEST(TransformerParameters, GShardIsJustOver600B) {
  // Lepikhin et al. 2020: MoE(2048E, 36L), "beyond 600 billion parameters". 18 MoE layers of 2048 experts of
  // 2 x 1024 x 8192 hold 618.5B; the dense rest about 0.6B.
  const Workload w = preset("gshard");
  std::int64_t experts = 0;
  for (const auto& l : w.layers)
    if (l.moe.experts > 0) experts += l.parameters;
  EXPECT_EQ(experts, std::int64_t{18} * 2048 * 2 * 1024 * 8192);
  EXPECT_GT(w.parameter_count(), 600e9);
  EXPECT_LT(w.parameter_count(), 625e9);
}

TEST(TransformerParameters, WikiText103LmMatchesBaevskiAndAuli) {
  // 16 blocks of 4 x (1024^2 + 1024) attention, 1024 x 4096 + 4096 and 4096 x 1024 + 1024 FFN, two LayerNorms:
  // 12,596,224 each. Adaptive input, bands of 20,000 x 1024, 40,000 x 256 and 207,744 x 64, each with its
  // projection to 1024; the adaptive softmax reuses them and adds 1024 x 2 cluster logits.
  const std::int64_t blocks = 16 * 12'596'224;
  const std::int64_t adaptive = 20'000 * 1024 + 1024 * 1024 + 40'000 * 256 + 256 * 1024 + 207'744 * 64 + 64 * 1024;
  const Workload w = preset("transformer-wikitext103");
  EXPECT_EQ(w.parameter_count(), blocks + adaptive + 2 * 1024);
  // fairseq's README and the paper (Table 1): 247M.
  EXPECT_NEAR(static_cast<double>(w.parameter_count()), 247e6, 0.001 * 247e6);
}

TEST(TransformerParameters, GroupedQueryAttentionShrinksOnlyTheKeyAndValueProjections) {
  // Llama 2 70B: 64 query heads and 8 key/value heads of 128. QKV = 8192 x (64 + 2 x 8) x 128 = 83,886,080; with
  // multi-head attention 3 x 8192^2 = 201,326,592.
  const Workload gqa = preset("llama2-70b");
  TransformerSpec mha_spec = transformer_spec("llama2-70b");
  mha_spec.kv_heads = 0;
  const Workload mha = transformer(mha_spec);
  EXPECT_EQ(find(gqa, "layers.0.attn.qkv").parameters, 83'886'080);
  EXPECT_EQ(find(gqa, "layers.0.attn.qkv").gemm.n, (64 + 2 * 8) * 128);
  EXPECT_EQ(find(mha, "layers.0.attn.qkv").parameters, 201'326'592);
  EXPECT_EQ(mha.parameter_count() - gqa.parameter_count(), std::int64_t{80} * (201'326'592 - 83'886'080));
  // The attention core's work does not change: every query head still attends over the whole sequence.
  EXPECT_DOUBLE_EQ(find(gqa, "layers.0.attn.core").forward_flops, find(mha, "layers.0.attn.core").forward_flops);
  EXPECT_LT(find(gqa, "layers.0.attn.core").input_elements, find(mha, "layers.0.attn.core").input_elements);
}

// ---- FLOPs ----

TEST(TransformerFlops, Gpt3175BMatchesMegatronFormula) {
  // Narayanan et al. 2021 train GPT-3 175B with B = 1536. The formula counts the GEMMs and attention exactly as we
  // do (24 s h^2 + 4 s^2 h forward per block, 2 s h V for the logits, backward twice forward), so the match is
  // exact; it leaves out the memory-bound ops (norms, GELU, adds, softmax, embedding), which add under 0.1%.
  const double batch = 1536;
  const Workload w = preset("gpt3-175b");
  const double expected = megatron_flops(batch, 2048, 96, 12288, 50257);
  EXPECT_NEAR(batch * gemm_and_attention_flops(w), expected, 1e-9 * expected);
  EXPECT_NEAR(batch * total_flops(w), expected, 0.02 * expected);
  EXPECT_GT(total_flops(w), gemm_and_attention_flops(w));
}

TEST(TransformerFlops, SmallerGptsMatchMegatronFormula) {
  const double gpt3_xl = megatron_flops(512, 2048, 24, 2048, 50257);
  EXPECT_NEAR(512 * gemm_and_attention_flops(preset("gpt3-1.3b")), gpt3_xl, 1e-9 * gpt3_xl);
  const double gpt2 = megatron_flops(8, 1024, 12, 768, 50257);
  EXPECT_NEAR(8 * gemm_and_attention_flops(preset("gpt2")), gpt2, 1e-9 * gpt2);
  // At 124M the memory-bound ops weigh more (small h), still within 2%.
  EXPECT_NEAR(8 * total_flops(preset("gpt2")), gpt2, 0.02 * gpt2);
}

TEST(TransformerFlops, AttentionCoreIsTwoBatchedGemmsOverTheSequence) {
  const Workload w = preset("gpt3-175b");
  const Layer& core = find(w, "layers.95.attn.core");
  EXPECT_EQ(core.kind, LayerKind::attention);
  EXPECT_DOUBLE_EQ(core.forward_flops, 2.0 * 2.0 * 2048 * 2048 * 12288); // Q K^T and P V
  EXPECT_DOUBLE_EQ(core.backward_flops, 2 * core.forward_flops);
  EXPECT_EQ(core.attention.sequence, 2048);
  EXPECT_EQ(core.attention.heads, 96);
  EXPECT_EQ(core.attention.head_dim, 128);
  EXPECT_TRUE(core.attention.causal);
  EXPECT_EQ(core.parameters, 0);
  EXPECT_FALSE(find(preset("bert-base"), "layers.0.attn.core").attention.causal); // bidirectional encoder
}

TEST(TransformerFlops, MixtralExpertsCostTopTwoOfEight) {
  const Workload w = preset("mixtral-8x7b");
  const Layer& experts = find(w, "layers.0.moe.experts");
  const double s = 32768, h = 4096, f = 14336;
  EXPECT_EQ(experts.parameters, 8 * 3 * 4096 * std::int64_t{14336});
  EXPECT_DOUBLE_EQ(experts.forward_flops, 2 * s * 3 * 2 * h * f); // top-2, three SwiGLU matrices
  EXPECT_DOUBLE_EQ(experts.backward_flops, 2 * experts.forward_flops);
  EXPECT_EQ(experts.moe.experts, 8);
  EXPECT_EQ(experts.moe.top_k, 2);
  EXPECT_DOUBLE_EQ(experts.moe.capacity_factor, 1.0);
  // Each expert gets 2 s / 8 of a sample's tokens through its three GEMMs.
  EXPECT_EQ(experts.gemm.m, 8192);
  EXPECT_EQ(experts.gemm.count, 8 * 3);
  EXPECT_DOUBLE_EQ(experts.gemm.flops(), experts.forward_flops);
  const Layer& router = find(w, "layers.0.moe.router");
  EXPECT_EQ(router.parameters, 4096 * 8);
  EXPECT_EQ(router.moe.experts, 0); // dense: counted whole in the active parameters
  EXPECT_FALSE(has(w, "layers.0.mlp.up"));
}

TEST(TransformerFlops, SwitchRoutesEveryOtherFfnOfEachStack) {
  const Workload w = preset("switch-base");
  int moe = 0;
  for (const auto& l : w.layers)
    moe += l.moe.experts > 0;
  EXPECT_EQ(moe, 12);
  EXPECT_TRUE(has(w, "encoder.layers.0.mlp.up"));
  EXPECT_TRUE(has(w, "encoder.layers.1.moe.experts"));
  EXPECT_TRUE(has(w, "decoder.layers.11.moe.experts"));
  EXPECT_EQ(find(w, "encoder.layers.1.moe.experts").moe.top_k, 1);
  EXPECT_DOUBLE_EQ(find(w, "encoder.layers.1.moe.experts").moe.capacity_factor, 1.25);
  EXPECT_EQ(find(w, "encoder.layers.1.moe.experts").gemm.m, 4); // 512 tokens over 128 experts
  // Cross-attention: 114 decoder queries over 512 encoder keys, per head, as two GEMMs.
  const Layer& scores = find(w, "decoder.layers.0.cross_attn.scores");
  EXPECT_EQ(scores.gemm.m, 114);
  EXPECT_EQ(scores.gemm.n, 512);
  EXPECT_EQ(scores.gemm.k, 64);
  EXPECT_EQ(scores.gemm.count, 12);
  EXPECT_EQ(find(w, "decoder.layers.0.cross_attn.kv").gemm.m, 512);
  EXPECT_FALSE(has(w, "encoder.layers.0.cross_attn.scores"));
  // T5's relative position bias: 32 buckets x 12 heads in the first block of each stack.
  EXPECT_EQ(find(w, "encoder.layers.0.attn.core").parameters, 32 * 12);
  EXPECT_EQ(find(w, "decoder.layers.0.attn.core").parameters, 32 * 12);
  EXPECT_EQ(find(w, "decoder.layers.1.attn.core").parameters, 0);
  EXPECT_FALSE(find(w, "encoder.layers.0.attn.core").attention.causal);
  EXPECT_TRUE(find(w, "decoder.layers.0.attn.core").attention.causal);
  EXPECT_EQ(find(w, "lm_head").gemm.m, 114);
  EXPECT_EQ(find(w, "lm_head").parameters, 0); // tied
}

// ---- Layer tables ----

TEST(TransformerLayers, EveryPresetIsConsistent) {
  for (const auto& name : transformer_spec_names()) {
    const Workload w = preset(name);
    EXPECT_EQ(w.name, name);
    EXPECT_EQ(w.sample_unit, "sequences");
    std::set<std::string> names;
    for (const auto& l : w.layers) {
      EXPECT_TRUE(names.insert(l.name).second) << name << ": duplicate " << l.name;
      const bool gemm_work = l.kind == LayerKind::matmul || l.kind == LayerKind::attention;
      EXPECT_DOUBLE_EQ(l.backward_flops, (gemm_work ? 2 : 1) * l.forward_flops) << name << " " << l.name;
      EXPECT_GT(l.forward_flops, 0) << name << " " << l.name;
      EXPECT_GT(l.output_elements, 0) << name << " " << l.name;
      if (l.kind == LayerKind::matmul && l.moe.experts == 0) {
        EXPECT_DOUBLE_EQ(l.gemm.flops(), l.forward_flops) << name << " " << l.name;
      }
      if (l.kind == LayerKind::embedding) {
        EXPECT_FALSE(l.sparse_gradient) << name;
      }
    }
    EXPECT_EQ(w.layers.back().name, "loss");
  }
}

TEST(TransformerLayers, DecoderBlockHasOneLayerPerOp) {
  const Workload w = preset("llama2-7b");
  const char* ops[] = {"attn_norm", "attn.qkv", "attn.core", "attn.out", "attn_add", "mlp_norm",
                       "mlp.up",    "mlp.gate", "mlp.act",   "mlp.down", "mlp_add"};
  for (const char* op : ops)
    EXPECT_TRUE(has(w, std::string("layers.31.") + op)) << op;
  EXPECT_EQ(w.layers.size(), 1 + 32 * std::size(ops) + 3); // embed, blocks, final_norm, lm_head, loss
  EXPECT_EQ(find(w, "embed").kind, LayerKind::embedding);
  EXPECT_EQ(find(w, "embed").parameters, 32000 * 4096);
  EXPECT_EQ(find(w, "lm_head").parameters, 32000 * 4096);    // untied
  EXPECT_EQ(find(w, "layers.0.attn_norm").parameters, 4096); // RMSNorm: weight only
  EXPECT_EQ(find(w, "layers.0.mlp.down").gemm.k, 11008);
  EXPECT_EQ(find(w, "layers.0.mlp.act").input_elements, 2 * 4096 * 11008);   // SiLU(gate) x up
  EXPECT_EQ(find(w, "lm_head").output_elements, std::int64_t{4096} * 32000); // the logits, kept
  // GPT-2: tied head, learned positions, LayerNorm with bias.
  const Workload gpt2 = preset("gpt2");
  EXPECT_EQ(find(gpt2, "lm_head").parameters, 0);
  EXPECT_EQ(find(gpt2, "embed").parameters, (50257 + 1024) * 768);
  EXPECT_EQ(find(gpt2, "layers.0.attn_norm").parameters, 2 * 768);
  EXPECT_FALSE(has(gpt2, "layers.0.mlp.gate"));
}

TEST(TransformerLayers, BertIsPostNorm) {
  const Workload w = preset("bert-base");
  auto index = [&](const std::string& n) {
    return std::find_if(w.layers.begin(), w.layers.end(), [&](const Layer& l) { return l.name == n; }) -
           w.layers.begin();
  };
  EXPECT_LT(index("layers.0.attn_add"), index("layers.0.attn_norm"));
  EXPECT_LT(index("layers.0.mlp_add"), index("layers.0.mlp_norm"));
  EXPECT_TRUE(has(w, "embed_norm"));
  EXPECT_FALSE(has(w, "final_norm"));
  EXPECT_EQ(find(w, "pooler").gemm.m, 1);          // [CLS] only
  EXPECT_EQ(find(w, "lm_head").parameters, 30522); // tied weights, own bias
}

TEST(TransformerLayers, PresetsAreInTheZoo) {
  const auto zoo = preset_names();
  for (const auto& name : transformer_spec_names()) {
    EXPECT_TRUE(std::find(zoo.begin(), zoo.end(), name) != zoo.end()) << name;
    const auto w = build_preset(name);
    ASSERT_TRUE(w.has_value()) << name;
    EXPECT_EQ(w->parameter_count(), preset(name).parameter_count()) << name;
  }
  EXPECT_EQ(transformer_spec_names().size(), 23u);
  EXPECT_THROW(transformer_spec("gpt-3"), std::invalid_argument);
}

TEST(TransformerLayers, RejectsInconsistentSpecs) {
  const TransformerSpec good = transformer_spec("gpt2");
  EXPECT_NO_THROW(transformer(good));
  auto broken = [&](auto change) {
    TransformerSpec s = good;
    change(s);
    return s;
  };
  EXPECT_THROW(transformer(broken([](auto& s) { s.layers = 0; })), std::invalid_argument);
  EXPECT_THROW(transformer(broken([](auto& s) { s.kv_heads = 5; })), std::invalid_argument);       // 12 % 5
  EXPECT_THROW(transformer(broken([](auto& s) { s.heads = 7; })), std::invalid_argument);          // 768 % 7
  EXPECT_THROW(transformer(broken([](auto& s) { s.sequence = 2048; })), std::invalid_argument);    // > 1024 positions
  EXPECT_THROW(transformer(broken([](auto& s) { s.decoder_layers = 2; })), std::invalid_argument); // no target
  EXPECT_THROW(transformer(broken([](auto& s) { s.moe = {8, 9, 1.0, 0, 1}; })), std::invalid_argument);
  EXPECT_THROW(transformer(broken([](auto& s) { s.adaptive = {{60000, 20000}, 4}; })), std::invalid_argument);
}

TEST(TransformerLayers, BuildingTheLargestPresetsIsFast) {
  // A benchmark, not a check: the time is recorded, not asserted.
  for (const char* name : {"gpt3-175b", "llama3-405b"}) {
    const auto start = std::chrono::steady_clock::now();
    const Workload w = preset(name);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    RecordProperty(std::string(name) + "_build_ms", std::to_string(ms));
    std::printf("%s: %zu layers built in %.3f ms\n", name, w.layers.size(), ms);
    EXPECT_FALSE(w.layers.empty());
  }
}

} // namespace
} // namespace dtsim::models
