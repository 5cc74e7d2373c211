#pragma once
// A model as the simulator sees it: an ordered list of layers with their per-sample cost.
// Plain value types; nothing here knows about GPUs, precisions or the simulator.
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::models {

enum class LayerKind : std::uint8_t {
  convolution,   // im2col-able: compute-bound, runs on tensor cores where the precision allows
  matmul,        // fully connected / linear layer: a GEMM of shape (m, n, k)
  attention,     // the attention core softmax(Q K^T / sqrt(d)) V: two batched GEMMs and a softmax
  elementwise,   // activation functions, residual additions: memory-bound
  normalization, // batch or layer norm: memory-bound
  pooling,       // max/avg pooling: memory-bound
  softmax,       // memory-bound
  embedding,     // table lookup: memory-bound, sparse gradients
};

std::string_view to_string(LayerKind kind);
// Convolutions and matmuls: backward costs twice the forward (data and weight gradients).
bool is_gemm_like(LayerKind kind);
// Backward FLOPs over forward FLOPs: 2 where the forward is GEMMs (convolutions and matmuls: data and weight
// gradients; attention: dP and dV, then dQ and dK), 1 for the memory-bound ops.
double backward_factor(LayerKind kind);

// One sample's GEMM work: `count` GEMMs C[m x n] = A[m x k] B[k x n] (count > 1: groups, heads, experts). m is
// the rows one sample contributes (a sequence's tokens, an image's output pixels; 1 for a CNN's classifier); the
// plan multiplies m by the micro-batch. Convolutions are their implicit GEMM (m = output pixels, n = output
// channels, k = input channels x kernel area, per group).
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t count = 1;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(count);
  }
};

// The attention core of one sample: `heads` of Q K^T (s x s x head_dim) and P V (s x head_dim x s).
struct AttentionShape {
  std::int64_t sequence = 0, heads = 0, head_dim = 0;
  bool causal = false;  // a causal mask: fused (flash) kernels skip the masked half
  bool dropout = false; // dropout on the attention probabilities (BERT, GPT-2/3; not Llama)
};

// Bytes one sample's unfused attention core keeps for backward beyond Q, K and V: the softmax output (a s^2
// elements) and, with dropout, its mask (1 byte each) and its output (a s^2): Korthikanti et al. 2022's 5 a s^2 b
// at 2-byte elements. Fused (flash) kernels keep none of it: they recompute the scores in backward.
double attention_score_bytes(const AttentionShape& shape, double element_bytes);

// A mixture-of-experts layer: parameters hold all `experts`; each token's FLOPs are those of the `top_k` it is
// routed to (Shazeer et al. 2017; Fedus et al. 2021).
struct ExpertShape {
  int experts = 0; // 0: not an expert layer
  int top_k = 0;
  double capacity_factor = 1.0;
};

// How Megatron-LM's tensor parallelism (Shoeybi et al. 2019, section 3) splits an op over t GPUs, and where its
// communication goes. Only the transformer and MLP builders set it; everything else stays replicated (no tensor
// parallelism).
enum class TensorSplit : std::uint8_t {
  replicated,    // every rank runs it whole (norms, residual adds; split along the sequence by sequence parallelism)
  column,        // output features split (QKV, FFN up, LM head): its input's gradient is all-reduced in backward
  column_shared, // column-parallel on the previous op's input (SwiGLU's gate, fused with up in Megatron): no
                 // communication of its own
  inner,         // runs on the split features between a column and a row op (attention core, activation): 1/t
  row,           // input features split (attention out, FFN down): its output is all-reduced in forward
  column_row,    // a whole FFN in one op (MoE experts): all-reduce after forward and of its input's gradient
  vocabulary,    // an embedding table split by rows: its output is all-reduced in forward
};

// What a memory-bound op computes, where frameworks run it as different kernels (fused or not): the plan prices each
// form by the kernels and bytes a framework really runs for it (sim/plan/op_cost.cpp).
enum class MemoryOp : std::uint8_t {
  generic,              // one kernel reading its input, writing its output (CNN activations, pooling, batch norm)
  layer_norm,           // a transformer's LayerNorm or RMSNorm
  activation,           // the activation after a linear layer (GeLU, ReLU, SiLU)
  gated_activation,     // act(gate) x up (GLU variants, Shazeer 2020: SwiGLU)
  residual_add,         // a residual add
  dropout_residual_add, // dropout on a residual branch, then the add
  cross_entropy,        // softmax cross-entropy over the logits
};

// Everything per sample (one image, one sequence). The plan multiplies by the batch.
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::elementwise;
  double forward_flops = 0;  // FLOPs per sample (1 multiply-accumulate = 2 FLOPs)
  double backward_flops = 0; // FLOPs per sample for the data and weight gradients
  std::int64_t parameters = 0;
  std::int64_t input_elements = 0;  // activations read per sample
  std::int64_t output_elements = 0; // activations written per sample (kept for backward)
  GemmShape gemm;                   // matmul and convolution: the GEMMs behind forward_flops
  AttentionShape attention;         // attention
  ExpertShape moe;                  // expert layers
  bool sparse_gradient = false;     // embedding tables: backward touches only the rows looked up
  // What backward needs of this op, per sample (Korthikanti et al. 2022, "Reducing Activation Recomputation in
  // Large Transformer Models", section 4.1): the activation elements it keeps (usually its input; none for a
  // residual add; none for an input another op already keeps), and bytes kept whatever the precision (dropout
  // masks at 1 byte per element, token indices). An unfused attention core's scores are not in here: see
  // attention_score_bytes().
  std::int64_t saved_elements = 0;
  std::int64_t saved_fixed_bytes = 0;
  int block = -1; // the repeated block (transformer layer) this op belongs to; -1 outside (embeddings, heads)
  TensorSplit tensor_split = TensorSplit::replicated;
  MemoryOp memory_op = MemoryOp::generic; // memory-bound ops: what they compute
  bool bias = false;                      // matmuls and convolutions: a bias vector, whose gradient backward reduces
  bool vocabulary_columns = false;        // a matmul whose n is the vocabulary (an LM head), which frameworks may pad
  bool conv3x3_stride1 = false; // an ungrouped 3x3, stride-1 convolution: cuDNN may run it as a Winograd transform
};

// The GEMMs `batch` samples run in a layer's forward: its `gemm` with m scaled by the batch, or an attention
// core's Q K^T (s x s x d) and P V (s x d x s) for every head of every sample; none for memory-bound ops.
std::vector<GemmShape> forward_gemms(const Layer& layer, std::int64_t batch);

struct Workload {
  std::string name;
  std::vector<Layer> layers;           // in forward order
  std::string sample_unit = "samples"; // what one sample is called in reports ("images", "sequences")

  std::int64_t parameter_count() const;
  // Parameters one sample's token uses: expert layers count top_k of their experts.
  std::int64_t active_parameter_count() const;
  double forward_flops_per_sample() const;
  int block_count() const;    // distinct repeated blocks (transformer layers); 0: none
  int expert_count() const;   // experts of the largest MoE layer; 0: no expert layers
  bool tensor_splits() const; // some op says how tensor parallelism splits it (transformers, MLPs)
  double backward_flops_per_sample() const;
};

} // namespace dtsim::models
