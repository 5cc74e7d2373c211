#pragma once
// Transformers (Vaswani et al. 2017) as the simulator sees them: decoder-only language models (GPT-2/3, Llama),
// encoders (BERT), encoder-decoders (T5-style: Switch, GShard), optionally with mixture-of-experts FFNs. One
// TransformerSpec describes the published configuration; transformer() turns it into one Layer per framework op,
// every FLOP and parameter computed from the shapes (models/transformer.cpp says which op is which).
#include "models/layer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::models {

enum class Positions : std::uint8_t {
  none,
  learned,      // a table of max_positions x hidden added to the token embeddings (BERT, GPT-2, GPT-3)
  sinusoidal,   // fixed sin/cos (Vaswani et al. 2017; fairseq): no parameters
  rotary,       // RoPE (Su et al. 2021; Llama, Mixtral): rotates q and k, no parameters
  relative_bias // T5's bucketed relative position bias: buckets x heads in the first block of each stack
};

enum class Norm : std::uint8_t {
  layer_norm, // weight and bias (Ba et al. 2016)
  rms_norm    // weight only (Zhang and Sennrich 2019; Llama, and T5's "LayerNorm")
};

enum class Activation : std::uint8_t { relu, gelu, silu };

// A mixture-of-experts FFN (Shazeer et al. 2017; GShard, Lepikhin et al. 2020; Switch, Fedus et al. 2021):
// a router (hidden x experts, no bias) sends each token to top_k experts, each an FFN of ffn_hidden.
struct MoeSpec {
  int experts = 0; // 0: every FFN is dense
  int top_k = 1;
  // Each expert buffers capacity_factor x top_k x tokens / experts tokens: Switch's factor (top-1) as is, GShard's
  // 2N/E (top-2) is 1. Kept in Layer::moe for the plan; the FLOPs count the routed tokens, not the padding.
  double capacity_factor = 1.0;
  std::int64_t ffn_hidden = 0; // each expert's hidden width; 0: the dense ffn_hidden
  int every = 1;               // every n-th FFN of a stack is an MoE (1: all, Mixtral; 2: every other, GShard/Switch)
};

// Adaptive input embeddings and adaptive softmax (Baevski and Auli 2019; Grave et al. 2017), tied as fairseq's
// transformer_lm_wiki103 ties them: the vocabulary is cut into bands [0, c0), [c0, c1), ..., [c_last, V); band i
// has dimension hidden / factor^i and a projection to hidden.
struct AdaptiveSpec {
  std::vector<std::int64_t> cutoffs; // empty: a plain embedding and LM head
  int factor = 4;
};

struct TransformerSpec {
  std::string name;
  int layers = 0;         // blocks; for an encoder-decoder, the encoder's blocks
  int decoder_layers = 0; // > 0: an encoder-decoder whose decoder blocks add cross-attention to the encoder output
  std::int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;          // grouped-query attention (Ainslie et al. 2023): key/value heads; 0 = heads (MHA)
  std::int64_t head_dim = 0; // 0: hidden / heads
  std::int64_t ffn_hidden = 0;
  Activation activation = Activation::gelu;
  bool gated_ffn = false;    // GLU variants (Shazeer 2020): SwiGLU = silu + gated, three matrices instead of two
  std::int64_t sequence = 0; // tokens per sample (the encoder's, for an encoder-decoder)
  std::int64_t decoder_sequence = 0; // encoder-decoder: target tokens per sample
  std::int64_t vocabulary = 0;
  bool tied_embeddings = true; // the LM head reuses the token embedding (no parameters of its own)
  Positions positions = Positions::learned;
  std::int64_t max_positions = 0; // learned: rows of the position table; 0 = sequence
  int relative_buckets = 32;      // relative_bias: buckets per head
  Norm norm = Norm::layer_norm;
  bool biases = true; // linear layers carry biases (GPT, BERT); Llama and T5 have none
  // Dropout after the embeddings, on the attention probabilities and on each residual branch (GPT-2/3, BERT, T5
  // train with 0.1); Llama and Mixtral train without. Its masks are part of the activation memory.
  bool dropout = true;
  bool causal = true;          // decoder-only (masked self-attention); false: a bidirectional encoder (BERT)
  bool post_norm = false;      // BERT: normalize after each residual add (else before each sub-block: pre-norm)
  bool embedding_norm = false; // BERT: LayerNorm over the summed embeddings
  bool final_norm = true;      // a norm after the last block (pre-norm models; fairseq's wiki103 LM has none)
  int token_types = 0;         // BERT: segment embeddings (2)
  // BERT pre-training heads (Devlin et al. 2019): the MLM transform (dense + GELU + LayerNorm) before the tied
  // decoder with its own bias, and next-sentence prediction (pooler dense + tanh on [CLS], then hidden x 2).
  bool bert_heads = false;
  AdaptiveSpec adaptive;
  MoeSpec moe;
};

// The layer table of one training sample (one sequence). Throws std::invalid_argument on an inconsistent spec.
Workload transformer(const TransformerSpec& spec);

// The published configurations behind the zoo's transformer presets, by preset name ("gpt3-175b", "llama2-7b",
// "mixtral-8x7b", ...; transformer_spec_names() lists them); throws std::invalid_argument for another name.
TransformerSpec transformer_spec(const std::string& preset);
std::vector<std::string> transformer_spec_names();

} // namespace dtsim::models
