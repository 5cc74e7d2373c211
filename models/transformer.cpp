// Transformer layer tables (Vaswani et al. 2017, "Attention Is All You Need"), one Layer per framework op of one
// training sample (a sequence of s tokens, hidden h, query heads a of head_dim d, key/value heads a_kv, FFN f):
//
//   embed                 token (+ position, + token type) lookup: an embedding layer, dense gradient (the table
//                         is all-reduced whole, and tied to the LM head where the model ties it)
//   layers.i.attn_norm    norm before the attention (after the residual add for post-norm BERT)
//   layers.i.attn.qkv     one GEMM: m = s, n = (a + 2 a_kv) d, k = h (grouped-query attention shrinks n)
//   layers.i.attn.core    softmax(Q K^T / sqrt(d)) V: LayerKind::attention with its AttentionShape. Forward FLOPs
//                         are the two batched GEMMs, 2 * 2 * s^2 * a d (Q K^T and P V); the softmax, scale and
//                         mask are inside this layer (as a fused flash kernel runs them) and not counted as FLOPs.
//                         Its output_elements are the context (s a d) a fused kernel keeps; an unfused one would
//                         also keep the s^2 a probabilities, which the plan can derive from the AttentionShape.
//   layers.i.attn.out     output projection: m = s, n = h, k = a d
//   layers.i.attn_add     residual add
//   layers.i.mlp_norm     norm before the FFN
//   layers.i.mlp.up/gate  h -> f (gate only for GLU variants: SwiGLU's three matrices)
//   layers.i.mlp.act      the activation (times the gate)
//   layers.i.mlp.down     f -> h
//   layers.i.mlp_add      residual add
//   final_norm, lm_head (m = s, n = vocabulary, k = h; no parameters when tied), loss (softmax cross-entropy)
//
// An MoE block replaces mlp.* by moe.router (h -> experts GEMM), moe.experts (all experts in one Layer: their
// parameters, the FLOPs of the top_k experts each token visits, Layer::moe) and moe.act. Encoder-decoders prefix
// "encoder." and "decoder." and give every decoder block a cross-attention (cross_attn.*) over the encoder output.
//
// Backward costs twice the forward for matmuls (data and weight gradients) and attention (dP and dV, then dQ and
// dK); the memory-bound ops cost as much backward as forward. Matmul FLOPs are 2 m n k exactly; bias adds are not
// counted (as neither Megatron-LM's formula nor the papers' parameter-based 6N estimates count them).
#include "models/transformer.hpp"
#include "models/net_builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

namespace dtsim::models {
namespace {

// FLOPs per element of the memory-bound ops; as in net_builder.hpp only the order of magnitude matters, their
// time is set by the bytes. LayerNorm: mean, variance, normalize, scale, shift; RMSNorm: square-sum, normalize,
// scale. GELU (tanh form): about 8; SiLU x / (1 + e^-x): 4; a GLU's gate adds one multiply. Softmax
// cross-entropy: max, subtract, exp, sum, normalize per logit.
constexpr double kElementwiseFlops = detail::kElementwiseFlopsPerElement;
constexpr double kLayerNormFlops = 5;
constexpr double kRmsNormFlops = 3;
constexpr double kGeluFlops = 8;
constexpr double kSiluFlops = 4;
constexpr double kSoftmaxFlops = 5;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

double activation_flops(Activation a) {
  switch (a) {
  case Activation::relu:
    return kElementwiseFlops;
  case Activation::gelu:
    return kGeluFlops;
  case Activation::silu:
    return kSiluFlops;
  }
  return kGeluFlops; // unreachable for valid enumerators
}

class Builder {
public:
  Layer& push(std::string name, LayerKind kind, double forward_flops, std::int64_t parameters,
              std::int64_t input_elements, std::int64_t output_elements) {
    Layer l;
    l.name = std::move(name);
    l.kind = kind;
    l.forward_flops = forward_flops;
    l.backward_flops = backward_factor(kind) * forward_flops;
    l.parameters = parameters;
    l.input_elements = input_elements;
    l.output_elements = output_elements;
    l.saved_elements = input_elements; // most ops keep their input for backward; callers adjust the rest
    l.block = block_;
    layers_.push_back(std::move(l));
    return layers_.back();
  }

  // The ops pushed from now on belong to block `index` (-1: outside the blocks).
  void set_block(int index) { block_ = index; }

  // `count` GEMMs [m x k] x [k x n] per sample with `parameters` weights.
  Layer& gemm(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t count,
              std::int64_t parameters) {
    const GemmShape shape{m, n, k, count};
    Layer& l = push(std::move(name), LayerKind::matmul, shape.flops(), parameters, m * k * count, m * n * count);
    l.gemm = shape;
    return l;
  }

  // A linear layer applied to m rows: weights k x n, plus n biases.
  Layer& linear(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, bool bias) {
    Layer& l = gemm(std::move(name), m, n, k, 1, n * k + (bias ? n : 0));
    l.bias = bias;
    return l;
  }

  // An activation function keeps its inputs for backward (GELU's input; SwiGLU's two).
  Layer& elementwise(std::string name, double flops_per_element, std::int64_t elements, int inputs = 1) {
    return push(std::move(name), LayerKind::elementwise, flops_per_element * d(elements), 0, inputs * elements,
                elements);
  }

  // A residual add keeps nothing (its backward passes the gradient through); with dropout on the branch (fused
  // bias-dropout-add, as Megatron-LM runs it) it keeps the branch's mask, 1 byte per element.
  void residual_add(std::string name, std::int64_t elements, bool dropout) {
    Layer& l = elementwise(std::move(name), kElementwiseFlops + (dropout ? 1 : 0), elements, 2);
    l.saved_elements = 0;
    l.saved_fixed_bytes = dropout ? elements : 0;
    l.memory_op = dropout ? MemoryOp::dropout_residual_add : MemoryOp::residual_add;
  }

  void norm(std::string name, Norm kind, std::int64_t rows, std::int64_t width) {
    const bool rms = kind == Norm::rms_norm;
    push(std::move(name), LayerKind::normalization, (rms ? kRmsNormFlops : kLayerNormFlops) * d(rows * width),
         rms ? width : 2 * width, rows * width, rows * width)
        .memory_op = MemoryOp::layer_norm;
  }

  std::vector<Layer> take() { return std::move(layers_); }

private:
  std::vector<Layer> layers_;
  int block_ = -1;
};

// The spec with its defaults resolved.
struct Dims {
  std::int64_t h, a, a_kv, d, f;
  std::int64_t q() const { return a * d; }
  std::int64_t kv() const { return a_kv * d; }
};

void check(const TransformerSpec& s) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument(fmt::format("{}: {}", s.name, what)); };
  if (s.layers < 1) fail(fmt::format("layers must be positive, not {}", s.layers));
  if (s.decoder_layers < 0) fail("decoder_layers must not be negative");
  if (s.hidden < 1 || s.heads < 1 || s.ffn_hidden < 1) fail("hidden, heads and ffn_hidden must be positive");
  if (s.kv_heads < 0 || s.kv_heads > s.heads || (s.kv_heads > 0 && s.heads % s.kv_heads != 0))
    fail(fmt::format("kv_heads {} must divide heads {}", s.kv_heads, s.heads));
  if (s.head_dim < 0 || (s.head_dim == 0 && s.hidden % s.heads != 0))
    fail(fmt::format("hidden {} is not a multiple of heads {}; give head_dim", s.hidden, s.heads));
  if (s.sequence < 1 || s.vocabulary < 1) fail("sequence and vocabulary must be positive");
  if (s.decoder_layers > 0 && s.decoder_sequence < 1) fail("an encoder-decoder needs a decoder_sequence");
  if (s.positions == Positions::learned && s.max_positions != 0 &&
      s.max_positions < std::max(s.sequence, s.decoder_sequence))
    fail(fmt::format("max_positions {} is shorter than the sequence", s.max_positions));
  if (s.positions == Positions::relative_bias && s.relative_buckets < 1) fail("relative_buckets must be positive");
  if (s.token_types < 0) fail("token_types must not be negative");
  if (s.moe.experts < 0) fail("moe.experts must not be negative");
  if (s.moe.experts > 0) {
    if (s.moe.top_k < 1 || s.moe.top_k > s.moe.experts)
      fail(fmt::format("moe.top_k {} must be in 1..{}", s.moe.top_k, s.moe.experts));
    if (s.moe.every < 1 || s.moe.ffn_hidden < 0 || !(s.moe.capacity_factor > 0))
      fail("moe.every and moe.capacity_factor must be positive, moe.ffn_hidden not negative");
  }
  std::int64_t previous = 0, dim = s.hidden;
  for (std::int64_t c : s.adaptive.cutoffs) {
    if (c <= previous || c >= s.vocabulary)
      fail("adaptive.cutoffs must increase strictly and stay below the vocabulary");
    previous = c;
  }
  if (!s.adaptive.cutoffs.empty()) {
    if (s.adaptive.factor < 1) fail("adaptive.factor must be positive");
    for (std::size_t i = 0; i < s.adaptive.cutoffs.size(); ++i)
      dim /= s.adaptive.factor;
    if (dim < 1) fail("adaptive.factor leaves the last band without dimensions");
  }
}

// Adaptive bands: [start, end) of the vocabulary, their dimension, and the tokens of one sample that fall in them.
struct Band {
  std::int64_t size, dim, tokens;
};

// A band's share of the tokens is unknown without the corpus; we take Zipf's law (frequency of rank r ~ 1/r), under
// which ranks [a, b) hold (H_b - H_a) / H_V of the tokens, H_n the harmonic numbers. A 3072-token WikiText-103
// sample then has 2,463 tokens in the 20k head band and 258 and 351 in the tails; the tails' FLOPs, which rest on
// this estimate, are under 1% of the model's.
std::vector<Band> bands(const TransformerSpec& s, std::int64_t tokens) {
  auto harmonic = [](std::int64_t n) {
    const double x = d(n);
    return std::log(x) + 0.5772156649015329 + 1 / (2 * x) - 1 / (12 * x * x);
  };
  std::vector<std::int64_t> edges = s.adaptive.cutoffs;
  edges.push_back(s.vocabulary);
  std::vector<Band> out;
  std::int64_t start = 0, dim = s.hidden, tail_tokens = 0;
  for (std::int64_t end : edges) {
    const double share = (harmonic(end) - (start > 0 ? harmonic(start) : 0)) / harmonic(s.vocabulary);
    const auto t = static_cast<std::int64_t>(std::llround(share * d(tokens)));
    out.push_back({end - start, dim, t});
    if (start > 0) tail_tokens += t;
    start = end;
    dim /= s.adaptive.factor;
  }
  out.front().tokens = tokens - tail_tokens; // the head band takes the rounding
  return out;
}

class TransformerBuilder {
public:
  explicit TransformerBuilder(const TransformerSpec& s)
      : s_(s), dims_{s.hidden, s.heads, s.kv_heads > 0 ? s.kv_heads : s.heads,
                     s.head_dim > 0 ? s.head_dim : s.hidden / s.heads, s.ffn_hidden} {}

  Workload build() {
    const bool enc_dec = s_.decoder_layers > 0;
    const std::string enc = enc_dec ? "encoder." : "";
    embed(enc + "embed", s_.sequence, /*owns_table=*/true);
    stack(enc, s_.layers, s_.sequence, enc_dec ? false : s_.causal, 0);
    if (s_.final_norm) b_.norm(enc + "final_norm", s_.norm, s_.sequence, dims_.h);
    std::int64_t head_tokens = s_.sequence;
    if (enc_dec) {
      embed("decoder.embed", s_.decoder_sequence, /*owns_table=*/false); // shares the encoder's table (T5, GShard)
      stack("decoder.", s_.decoder_layers, s_.decoder_sequence, true, s_.sequence);
      if (s_.final_norm) b_.norm("decoder.final_norm", s_.norm, s_.decoder_sequence, dims_.h);
      head_tokens = s_.decoder_sequence;
    }
    if (s_.bert_heads) bert_heads();
    if (s_.adaptive.cutoffs.empty())
      lm_head(head_tokens);
    else
      adaptive_softmax(head_tokens);

    Workload w;
    w.name = s_.name;
    w.layers = b_.take();
    w.sample_unit = "sequences";
    return w;
  }

private:
  // Token lookup plus whatever is added to it: learned positions, BERT's token types, fixed sinusoids. One
  // operation per element per table (the gather, then the adds). Adaptive inputs look each token up in its band
  // and project it to hidden (fairseq's AdaptiveInput: a bias-free Linear per band, the head band's included).
  void embed(const std::string& name, std::int64_t tokens, bool owns_table) {
    const std::int64_t h = dims_.h;
    std::int64_t params = 0, tables = 1;
    if (s_.positions == Positions::learned) {
      params += (s_.max_positions > 0 ? s_.max_positions : std::max(s_.sequence, s_.decoder_sequence)) * h;
      ++tables;
    }
    if (s_.positions == Positions::sinusoidal) ++tables;
    if (s_.token_types > 0) {
      params += s_.token_types * h;
      ++tables;
    }
    if (!owns_table) params = 0;
    if (s_.adaptive.cutoffs.empty()) {
      if (owns_table) params += s_.vocabulary * h;
      // Backward needs the token indices (int64), and with dropout the mask over the embedding output.
      Layer& e = b_.push(name, LayerKind::embedding, d(tables * tokens * h), params, tokens, tokens * h);
      e.saved_elements = 0;
      e.tensor_split = TensorSplit::vocabulary;
      e.saved_fixed_bytes = 8 * tokens + (s_.dropout ? tokens * h : 0);
    } else {
      const auto bs = bands(s_, tokens);
      std::int64_t looked_up = 0;
      for (const auto& band : bs) {
        params += owns_table ? band.size * band.dim : 0;
        looked_up += band.tokens * band.dim;
      }
      b_.push(name, LayerKind::embedding, d(looked_up + (tables - 1) * tokens * h), params, tokens, looked_up);
      for (std::size_t i = 0; i < bs.size(); ++i)
        if (bs[i].tokens > 0)
          b_.gemm(fmt::format("{}.proj{}", name, i), bs[i].tokens, h, bs[i].dim, 1, owns_table ? bs[i].dim * h : 0);
    }
    if (s_.embedding_norm) b_.norm(name + "_norm", s_.norm, tokens, h);
  }

  void stack(const std::string& prefix, int blocks, std::int64_t tokens, bool causal, std::int64_t memory) {
    for (int i = 0; i < blocks; ++i) {
      const bool moe = s_.moe.experts > 0 && i % s_.moe.every == s_.moe.every - 1;
      b_.set_block(blocks_++);
      block(fmt::format("{}layers.{}.", prefix, i), tokens, causal, i == 0, memory, moe);
    }
    b_.set_block(-1);
  }

  // One block. memory > 0: a decoder block that also attends to `memory` encoder tokens.
  void block(const std::string& p, std::int64_t s, bool causal, bool first, std::int64_t memory, bool moe) {
    const bool pre = !s_.post_norm;
    const std::int64_t h = dims_.h;
    if (pre) b_.norm(p + "attn_norm", s_.norm, s, h);
    self_attention(p + "attn.", s, causal, first);
    b_.residual_add(p + "attn_add", s * h, s_.dropout);
    if (!pre) b_.norm(p + "attn_norm", s_.norm, s, h);
    if (memory > 0) {
      if (pre) b_.norm(p + "cross_attn_norm", s_.norm, s, h);
      cross_attention(p + "cross_attn.", s, memory);
      b_.residual_add(p + "cross_attn_add", s * h, s_.dropout);
      if (!pre) b_.norm(p + "cross_attn_norm", s_.norm, s, h);
    }
    if (pre) b_.norm(p + "mlp_norm", s_.norm, s, h);
    if (moe)
      experts(p + "moe.", s);
    else
      ffn(p + "mlp.", s);
    b_.residual_add(p + "mlp_add", s * h, s_.dropout);
    if (!pre) b_.norm(p + "mlp_norm", s_.norm, s, h);
  }

  void self_attention(const std::string& p, std::int64_t s, bool causal, bool first) {
    const auto& m = dims_;
    b_.linear(p + "qkv", s, m.q() + 2 * m.kv(), m.h, s_.biases).tensor_split = TensorSplit::column;
    // T5 computes its relative position bias (buckets x heads) in the first block of each stack and reuses it.
    const std::int64_t bias = (first && s_.positions == Positions::relative_bias) ? s_.relative_buckets * m.a : 0;
    Layer& core = b_.push(p + "core", LayerKind::attention, 2.0 * 2.0 * d(s) * d(s) * d(m.q()), bias,
                          s * (m.q() + 2 * m.kv()), s * m.q());
    core.attention = {s, m.a, m.d, causal, s_.dropout};
    core.tensor_split = TensorSplit::inner;
    b_.linear(p + "out", s, m.h, m.q(), s_.biases).tensor_split = TensorSplit::row;
  }

  // Queries from the decoder's s tokens, keys and values from the encoder's `memory` tokens. AttentionShape has a
  // single sequence length, so the core is spelled out as its two batched GEMMs (one per head) and the softmax.
  void cross_attention(const std::string& p, std::int64_t s, std::int64_t memory) {
    const auto& m = dims_;
    b_.linear(p + "q", s, m.q(), m.h, s_.biases).tensor_split = TensorSplit::column;
    b_.linear(p + "kv", memory, 2 * m.kv(), m.h, s_.biases).tensor_split = TensorSplit::column;
    const std::int64_t probabilities = s * memory * m.a;
    Layer& scores = b_.gemm(p + "scores", s, memory, m.d, m.a, 0); // Q K^T
    scores.input_elements = scores.saved_elements = s * m.q() + memory * m.kv();
    scores.tensor_split = TensorSplit::inner;
    // Softmax backward needs its output, which P V keeps as its input: the softmax keeps nothing of its own.
    Layer& softmax =
        b_.push(p + "softmax", LayerKind::softmax, kSoftmaxFlops * d(probabilities), 0, probabilities, probabilities);
    softmax.saved_elements = 0;
    softmax.tensor_split = TensorSplit::inner;
    Layer& context = b_.gemm(p + "context", s, m.d, memory, m.a, 0); // P V
    context.input_elements = context.saved_elements = probabilities + memory * m.kv();
    context.tensor_split = TensorSplit::inner;
    if (s_.dropout) context.saved_fixed_bytes = probabilities; // the probabilities' dropout mask
    b_.linear(p + "out", s, m.h, m.q(), s_.biases).tensor_split = TensorSplit::row;
  }

  void ffn(const std::string& p, std::int64_t s) {
    const std::int64_t h = dims_.h, f = dims_.f;
    b_.linear(p + "up", s, f, h, s_.biases).tensor_split = TensorSplit::column;
    if (s_.gated_ffn) {
      Layer& gate = b_.linear(p + "gate", s, f, h, s_.biases);
      gate.saved_elements = 0; // shares up's input
      gate.tensor_split = TensorSplit::column_shared;
    }
    activation(p + "act", s * f).tensor_split = TensorSplit::inner;
    b_.linear(p + "down", s, h, f, s_.biases).tensor_split = TensorSplit::row;
  }

  // The router scores every token against every expert; each token then runs through top_k experts. The experts
  // are one Layer: parameters of all of them, FLOPs of top_k per token, and as GEMM shape each expert's share of a
  // sample's routed tokens (top_k s / experts, rounded up) through its `matrices` equal-sized GEMMs (the down
  // projection's f x h counted as h x f: the same work).
  void experts(const std::string& p, std::int64_t s) {
    const std::int64_t h = dims_.h, f = s_.moe.ffn_hidden > 0 ? s_.moe.ffn_hidden : dims_.f;
    const std::int64_t e = s_.moe.experts, k = s_.moe.top_k, matrices = s_.gated_ffn ? 3 : 2;
    b_.linear(p + "router", s, e, h, false);
    const std::int64_t per_expert = matrices * h * f + (s_.biases ? (matrices - 1) * f + h : 0);
    const std::int64_t routed = k * s;
    Layer& x = b_.push(p + "experts", LayerKind::matmul, d(routed) * d(matrices) * 2.0 * d(h) * d(f), e * per_expert,
                       routed * h, routed * h);
    x.gemm = {(routed + e - 1) / e, f, h, e * matrices};
    x.moe = {static_cast<int>(e), static_cast<int>(k), s_.moe.capacity_factor};
    x.tensor_split = TensorSplit::column_row;
    activation(p + "act", routed * f).tensor_split = TensorSplit::inner;
  }

  // The FFN's activation over `elements` (a GLU's act(gate) x up reads both; Shazeer 2020).
  Layer& activation(const std::string& name, std::int64_t elements) {
    Layer& act =
        b_.elementwise(name, activation_flops(s_.activation) + (s_.gated_ffn ? 1 : 0), elements, s_.gated_ffn ? 2 : 1);
    act.memory_op = s_.gated_ffn ? MemoryOp::gated_activation : MemoryOp::activation;
    return act;
  }

  // BERT's pre-training heads before the (tied) MLM decoder: the pooler and next-sentence classifier on the [CLS]
  // token, the MLM transform on every token (Hugging Face's BertForPreTraining scores every position).
  void bert_heads() {
    const std::int64_t s = s_.sequence, h = dims_.h;
    b_.linear("pooler", 1, h, h, true);
    b_.elementwise("pooler.act", kElementwiseFlops, h); // tanh
    b_.linear("nsp", 1, 2, h, true);
    b_.linear("mlm.transform", s, h, h, true);
    b_.elementwise("mlm.act", kGeluFlops, s * h).memory_op = MemoryOp::activation;
    b_.norm("mlm.norm", s_.norm, s, h);
  }

  void lm_head(std::int64_t s) {
    const std::int64_t v = s_.vocabulary, h = dims_.h;
    // Tied: the embedding holds the weights; BERT's decoder still has its own bias.
    const std::int64_t params = (s_.tied_embeddings ? 0 : v * h) + (s_.bert_heads ? v : 0);
    Layer& head = b_.gemm("lm_head", s, v, h, 1, params);
    head.tensor_split = TensorSplit::column;
    head.vocabulary_columns = true;
    Layer& loss = b_.push("loss", LayerKind::softmax, kSoftmaxFlops * d(s * v), 0, s * v, s);
    loss.tensor_split = TensorSplit::inner;
    loss.memory_op = MemoryOp::cross_entropy;
  }

  // fairseq's AdaptiveSoftmax: a head over the first band plus one logit per tail cluster for every token; a tail
  // (projection to its band's dimension, then its band's logits) only for the tokens whose target falls in it.
  // Tied as transformer_lm_wiki103 ties it: the head's word weights, the tails' projections and outputs are the
  // adaptive input's; only the cluster logits (hidden x tails) are the head's own.
  void adaptive_softmax(std::int64_t s) {
    const std::int64_t h = dims_.h;
    const auto bs = bands(s_, s);
    const auto tails = static_cast<std::int64_t>(bs.size()) - 1;
    const std::int64_t head = bs.front().size + tails;
    b_.gemm("lm_head", s, head, h, 1, tails * h + (s_.tied_embeddings ? 0 : bs.front().size * h));
    std::int64_t logits = s * head;
    for (std::size_t i = 1; i < bs.size(); ++i) {
      const Band& band = bs[i];
      if (band.tokens == 0) continue;
      const bool own = !s_.tied_embeddings;
      b_.gemm(fmt::format("lm_head.tail{}.proj", i), band.tokens, band.dim, h, 1, own ? band.dim * h : 0);
      b_.gemm(fmt::format("lm_head.tail{}.out", i), band.tokens, band.size, band.dim, 1,
              own ? band.size * band.dim : 0);
      logits += band.tokens * band.size;
    }
    b_.push("loss", LayerKind::softmax, kSoftmaxFlops * d(logits), 0, logits, s).memory_op = MemoryOp::cross_entropy;
  }

  const TransformerSpec& s_;
  Dims dims_;
  Builder b_;
  int blocks_ = 0; // blocks built so far, encoder and decoder together
};

// ---- Published configurations ----

// GPT-2 (Radford et al. 2019; Hugging Face's gpt2 configs) and GPT-3 (Brown et al. 2020, Table 2.1): pre-norm
// LayerNorm, GELU FFN of 4h, biases everywhere, learned positions, the LM head tied to the BPE embedding of
// 50,257 tokens. GPT-3's alternating locally banded sparse attention is modelled as dense.
TransformerSpec gpt(std::string name, int layers, std::int64_t hidden, int heads, std::int64_t sequence) {
  TransformerSpec s;
  s.name = std::move(name);
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.ffn_hidden = 4 * hidden;
  s.sequence = sequence;
  s.max_positions = sequence;
  s.vocabulary = 50257;
  return s;
}

// BERT (Devlin et al. 2019; google-research/bert's bert_config.json): post-norm, GELU FFN of 4h, learned
// positions (512) and token types (2), WordPiece vocabulary 30,522, with the pre-training heads. Sequence 512:
// the longest of BERT's two pre-training phases (128 for 90% of the steps, then 512).
TransformerSpec bert(std::string name, int layers, std::int64_t hidden, int heads) {
  TransformerSpec s = gpt(std::move(name), layers, hidden, heads, 512);
  s.vocabulary = 30522;
  s.causal = false;
  s.post_norm = true;
  s.embedding_norm = true;
  s.final_norm = false;
  s.token_types = 2;
  s.bert_heads = true;
  return s;
}

// Llama 2 (Touvron et al. 2023, Table 1 and Hugging Face's configs): pre-norm RMSNorm, SwiGLU, no biases, no
// dropout, rotary positions, untied LM head. Llama 3 (Dubey et al. 2024, Table 3): the same with GQA (8 kv heads) at
// every size and a vocabulary of 128,256 (Hugging Face's config; the paper rounds it to 128K).
TransformerSpec llama(std::string name, int layers, std::int64_t hidden, int heads, int kv_heads,
                      std::int64_t ffn_hidden, std::int64_t vocabulary, std::int64_t sequence) {
  TransformerSpec s;
  s.name = std::move(name);
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.ffn_hidden = ffn_hidden;
  s.activation = Activation::silu;
  s.gated_ffn = true;
  s.sequence = sequence;
  s.vocabulary = vocabulary;
  s.tied_embeddings = false;
  s.positions = Positions::rotary;
  s.norm = Norm::rms_norm;
  s.biases = false;
  s.dropout = false; // Llama's and Mixtral's configs: attention_dropout 0.0, no hidden dropout
  return s;
}

// fairseq's transformer_lm_wiki103 (Baevski and Auli 2019, "Adaptive Input Representations for Neural Language
// Modeling"; fairseq/models/transformer_lm.py): 16 pre-norm blocks, h 1024, 8 heads, ReLU FFN 4096, sinusoidal
// positions, no final norm, adaptive input and softmax with cutoffs 20k/60k and factor 4, all tied, trained on
// 3072-token blocks (examples/language_model/README.adaptive_inputs.md). The vocabulary is fairseq's WikiText-103
// dictionary: 267,735 words + 4 specials, padded to a multiple of 8 = 267,744.
TransformerSpec wikitext103() {
  TransformerSpec s;
  s.name = "transformer-wikitext103";
  s.layers = 16;
  s.hidden = 1024;
  s.heads = 8;
  s.ffn_hidden = 4096;
  s.activation = Activation::relu;
  s.sequence = 3072;
  s.vocabulary = 267744;
  s.positions = Positions::sinusoidal;
  s.final_norm = false;
  s.adaptive = {{20000, 60000}, 4};
  return s;
}

// The encoder-decoders of the MoE papers (T5-style, Raffel et al. 2020): `layers` encoder and as many decoder
// blocks, a ReLU FFN, no biases; positions, norms and experts are each preset's own.
TransformerSpec encoder_decoder(std::string name, int layers, std::int64_t hidden, int heads, std::int64_t ffn_hidden,
                                std::int64_t sequence, std::int64_t decoder_sequence, std::int64_t vocabulary) {
  TransformerSpec s;
  s.name = std::move(name);
  s.layers = layers;
  s.decoder_layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.ffn_hidden = ffn_hidden;
  s.activation = Activation::relu;
  s.sequence = sequence;
  s.decoder_sequence = decoder_sequence;
  s.vocabulary = vocabulary;
  s.biases = false;
  return s;
}

// Switch-Base (Fedus et al. 2021, Table 9; google/flaxformer's switch_base.gin, Hugging Face's
// google/switch-base-128): T5-base (12 encoder + 12 decoder blocks, h 768, 12 heads of 64, ReLU FFN 3072,
// RMS-style T5 LayerNorm, no biases, 32-bucket relative position bias, tied 32,128-token vocabulary) with every
// other FFN of each stack (the odd blocks) a Switch layer of 128 experts, top-1, capacity factor 1.25. T5's
// span-corruption pre-training: 512 input and 114 target tokens (Raffel et al. 2020).
TransformerSpec switch_base() {
  TransformerSpec s = encoder_decoder("switch-base", 12, 768, 12, 3072, 512, 114, 32128);
  s.head_dim = 64;
  s.positions = Positions::relative_bias;
  s.relative_buckets = 32;
  s.norm = Norm::rms_norm;
  s.moe = {128, 1, 1.25, 3072, 2};
  return s;
}

// Mixtral 8x7B (Jiang et al. 2024; Hugging Face's mistralai/Mixtral-8x7B-v0.1): the Mistral 7B block (32 layers,
// h 4096, 32 heads, 8 kv heads, RMSNorm, rotary, no biases) with every FFN 8 SwiGLU experts of 14,336, top-2;
// vocabulary 32,000, untied; trained with a 32k context. Its token dropping is unpublished: capacity factor 1.
TransformerSpec mixtral() {
  TransformerSpec s = llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768);
  s.moe = {8, 2, 1.0, 14336, 1};
  return s;
}

// GShard's MoE(2048E, 36L) (Lepikhin et al. 2020, sections 2 and 3): the 600B-parameter M4 translation model. 36
// layers = 18 encoder + 18 decoder blocks, h 1024, 16 heads, ReLU FFN 8192, every other FFN an MoE of 2048
// experts with top-2 gating and expert capacity 2N/E (factor 1 here). The paper does not give the sequence length,
// the vocabulary's exact size or the norms; we take 1024 source and 1024 target tokens, the 64k shared
// SentencePiece vocabulary, pre-norm LayerNorm, sinusoidal positions and no biases.
TransformerSpec gshard() {
  TransformerSpec s = encoder_decoder("gshard", 18, 1024, 16, 8192, 1024, 1024, 64000);
  s.positions = Positions::sinusoidal;
  s.moe = {2048, 2, 1.0, 8192, 2};
  return s;
}

const std::map<std::string, TransformerSpec>& specs() {
  static const std::map<std::string, TransformerSpec> table = [] {
    std::map<std::string, TransformerSpec> t;
    auto add = [&](TransformerSpec s) { t.emplace(s.name, std::move(s)); };
    add(wikitext103());
    add(bert("bert-base", 12, 768, 12));
    add(bert("bert-large", 24, 1024, 16));
    add(gpt("gpt2", 12, 768, 12, 1024));
    add(gpt("gpt2-medium", 24, 1024, 16, 1024));
    add(gpt("gpt2-large", 36, 1280, 20, 1024));
    add(gpt("gpt2-xl", 48, 1600, 25, 1024));
    add(gpt("gpt3-125m", 12, 768, 12, 2048));
    add(gpt("gpt3-350m", 24, 1024, 16, 2048));
    // Table 2.1 lists 24 heads of 128 for d_model 2048, which do not multiply out; we keep d_head 128 (16 heads),
    // as Megatron-LM and GPT-Neo's 1.3B do. Neither parameters nor FLOPs depend on the split.
    add(gpt("gpt3-1.3b", 24, 2048, 16, 2048));
    add(gpt("gpt3-2.7b", 32, 2560, 32, 2048));
    add(gpt("gpt3-6.7b", 32, 4096, 32, 2048));
    add(gpt("gpt3-13b", 40, 5120, 40, 2048)); // Table 2.1's d_model 5140 is a typo for 40 x 128 = 5120
    add(gpt("gpt3-175b", 96, 12288, 96, 2048));
    add(llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096));
    add(llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096));
    add(llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096));
    add(llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192));
    add(llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192));
    add(llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192));
    add(switch_base());
    add(mixtral());
    add(gshard());
    return t;
  }();
  return table;
}

} // namespace

Workload transformer(const TransformerSpec& spec) {
  check(spec);
  return TransformerBuilder(spec).build();
}

TransformerSpec transformer_spec(const std::string& preset) {
  const auto it = specs().find(preset);
  if (it == specs().end()) throw std::invalid_argument(fmt::format("no transformer preset \"{}\"", preset));
  return it->second;
}

std::vector<std::string> transformer_spec_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : specs())
    names.push_back(name);
  return names;
}

} // namespace dtsim::models
