// Kernels per layer (op_cost.hpp). Attention's kernels follow Megatron-LM's unfused path (a batched GEMM, the
// scale-mask-softmax, dropout, a batched GEMM) and FlashAttention-2 (Dao 2023) for the fused one; memory-bound ops
// the kernels each framework runs for them (calibration/frameworks/*.json say which it fuses, and why).
#include "sim/plan/op_cost.hpp"
#include "sim/plan/kernel_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace dtsim::plan {

using calibration::GemmDims;
using calibration::KernelClass;
using calibration::KernelCost;
using calibration::Precision;
using models::MemoryOp;

namespace {

// FLOPs per score of the scale-mask-softmax and of dropout: only their bytes set their time.
constexpr double kSoftmaxFlopsPerScore = 5;
constexpr double kDropoutFlopsPerScore = 1;
// Bytes of a dropout mask element (PyTorch's native dropout keeps a bool mask).
constexpr double kMaskBytes = 1;
// Autocast (precision amp: fp32 parameters under torch.autocast). PyTorch's "Automatic Mixed Precision" op reference
// (CUDA op-specific behavior): matmul, bmm, linear and convolutions run in 16 bits on inputs autocast casts to 16 bits
// (their fp32 weights too, once per forward, the cast's gradient back to fp32 in backward); softmax, log_softmax,
// layer_norm and cross_entropy run in fp32 on inputs it casts to fp32; other ops run in their widest input's type. So
// an fp32-parameter model's residual stream stays fp32, its layer norms read and write fp32 and their consumers cast,
// and explicit attention casts its scores to fp32 for the softmax, keeps them fp32 through dropout and casts them back
// for P V: the project's H200 trace of eager GPT-2 runs 171 bf16 casts and its softmax and dropout on floats.
constexpr double kFp32Bytes = 4;
bool autocast(const CostContext& c) {
  return c.precision == Precision::amp;
}
// Multi-tensor kernels (apex's and PyTorch's multi_tensor_apply): 65,536 elements a chunk, at most 320 chunks and
// 36 tensors (four lists: gradient, weight, two states) per launch (apex csrc/multi_tensor_apply.cuh).
constexpr double kElementsPerMultiTensorLaunch = 320.0 * 65536;
constexpr double kTensorsPerMultiTensorLaunch = 36;
// Transformer Engine's DelayedScaling recipe keeps 1024 amaxes per fp8 tensor (amax_history_len).
constexpr double kAmaxHistory = 1024;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Where a kernel is issued from: Python (forward, recomputation, the optimizer) or autograd's C++ engine (backward).
enum class Issuer : std::uint8_t { python, autograd };

KernelCost memory_kernel(std::string name, double bytes, double flops = 0, int kernels = 1) {
  KernelCost k;
  k.kind = KernelClass::memory;
  k.name = std::move(name);
  k.bytes = bytes;
  k.flops = flops;
  k.kernels = kernels;
  return k;
}

KernelCost gemm_kernel(KernelClass kind, std::string name, Precision p, GemmDims g) {
  KernelCost k;
  k.kind = kind;
  k.precision = p;
  k.name = std::move(name);
  k.flops = g.flops();
  k.bytes = g.bytes > 0 ? g.bytes
                        : g.count * ((g.m * g.k + g.k * g.n) * calibration::gemm_input_bytes(p) +
                                     g.m * g.n * calibration::gemm_output_bytes(p));
  k.gemms = {g};
  return k;
}

// Every kernel of `cost` issued by `issuer`: a dispatch per kernel and a launch each.
OpCost issued(OpCost cost, const CostContext& c, Issuer issuer) {
  const auto& host = c.framework.host;
  const double dispatch = issuer == Issuer::python ? host.python_dispatch : host.cpp_dispatch;
  for (auto& k : cost.kernels)
    k.host_seconds = k.kernels * (dispatch + host.launch);
  return cost;
}

// One attention core at a micro-batch: its shape, the precision its GEMMs run in and the bytes of an element.
struct AttentionDims {
  double s, d, heads; // sequence, head dim, heads x samples
  Precision p;
  double e;
  double scores() const { return heads * s * s; }
};

AttentionDims attention_dims(const models::Layer& layer, const CostContext& c) {
  const auto& a = layer.attention;
  const double s = d(a.sequence), heads = d(a.heads) * d(c.batch);
  return {s, d(a.head_dim), heads, calibration::attention_precision(c.precision),
          calibration::activation_bytes(c.precision)};
}

// Unfused forward up to the probabilities that P V reads: Q K^T, the scale-mask-softmax (one fused kernel, or PyTorch
// eager's scale, mask and softmax, each reading and writing the scores), dropout. Selective recomputation reruns
// exactly these.
OpCost unfused_scores(const models::Layer& layer, const CostContext& c) {
  const auto a = attention_dims(layer, c);
  OpCost cost;
  cost.kernels.push_back(gemm_kernel(KernelClass::gemm, "bmm Q K^T", a.p, {a.s, a.s, a.d, a.heads}));
  const bool fused = c.framework.fuses_softmax(a.s);
  if (autocast(c) && !fused) { // scale and mask in 16 bits; the cast, softmax and dropout in fp32; the cast back
    const double f = kFp32Bytes;
    cost.kernels.push_back(memory_kernel("scale, mask", 2 * 2 * a.e * a.scores(), 2 * a.scores(), 2));
    cost.kernels.push_back(memory_kernel("softmax (fp32, autocast)", (a.e + f + 2 * f) * a.scores(),
                                         kSoftmaxFlopsPerScore * a.scores(), 2));
    if (layer.attention.dropout)
      cost.kernels.push_back(
          memory_kernel("dropout (fp32)", (2 * f + kMaskBytes) * a.scores(), kDropoutFlopsPerScore * a.scores()));
    cost.kernels.push_back(memory_kernel("autocast cast for P V", (f + a.e) * a.scores()));
    return cost;
  }
  const int passes = fused ? 1 : 3;
  cost.kernels.push_back(memory_kernel(fused ? "scale-mask-softmax" : "scale, mask, softmax",
                                       passes * 2 * a.e * a.scores(), kSoftmaxFlopsPerScore * a.scores(), passes));
  if (layer.attention.dropout)
    cost.kernels.push_back(
        memory_kernel("dropout", (2 * a.e + kMaskBytes) * a.scores(), kDropoutFlopsPerScore * a.scores()));
  return cost;
}

// The fused kernel's library, or nothing where the core runs unfused.
std::optional<KernelClass> fused_library(scenario::AttentionKernel a) {
  if (a == scenario::AttentionKernel::flash) return KernelClass::attention;
  if (a == scenario::AttentionKernel::cudnn) return KernelClass::cudnn_attention;
  return std::nullopt;
}

OpCost attention_forward(const models::Layer& layer, const CostContext& c) {
  const auto a = attention_dims(layer, c);
  if (const auto library = fused_library(c.attention))
    return {
        {calibration::fused_attention_kernel(*library, a.s, a.d, a.heads, layer.attention.causal, false, a.p,
                                             (d(layer.input_elements) + d(layer.output_elements)) * d(c.batch) * a.e)}};
  OpCost cost = unfused_scores(layer, c);
  cost.kernels.push_back(gemm_kernel(KernelClass::gemm, "bmm P V", a.p, {a.s, a.d, a.s, a.heads}));
  return cost;
}

OpCost attention_backward(const models::Layer& layer, const CostContext& c) {
  const auto a = attention_dims(layer, c);
  const Precision p = a.p;
  const double e = a.e;
  if (const auto library = fused_library(c.attention)) // reads Q, K, V, O, dO; writes dQ, dK, dV
    return {{calibration::fused_attention_kernel(*library, a.s, a.d, a.heads, layer.attention.causal, true, p,
                                                 (2 * d(layer.input_elements) + 2 * d(layer.output_elements)) *
                                                     d(c.batch) * e)}};
  OpCost cost;
  if (c.recompute == scenario::Recompute::selective) cost += unfused_scores(layer, c);
  cost.kernels.push_back(gemm_kernel(KernelClass::gemm, "bmm dV = P^T dO", p, {a.s, a.d, a.s, a.heads}));
  cost.kernels.push_back(gemm_kernel(KernelClass::gemm, "bmm dP = dO V^T", p, {a.s, a.s, a.d, a.heads}));
  const bool fused = c.framework.fuses_softmax(a.s);
  if (autocast(c) && !fused) { // forward's flow reversed: dP to fp32, dropout and softmax backward in fp32, dS back
    const double f = kFp32Bytes;
    cost.kernels.push_back(memory_kernel("autocast cast of dP", (e + f) * a.scores()));
    if (layer.attention.dropout)
      cost.kernels.push_back(memory_kernel("dropout bwd (fp32)", (2 * f + kMaskBytes) * a.scores(), a.scores()));
    cost.kernels.push_back(
        memory_kernel("softmax bwd (fp32), cast", (3 * f + f + e) * a.scores(), kSoftmaxFlopsPerScore * a.scores(), 2));
    cost.kernels.push_back(memory_kernel("mask, scale bwd", 2 * 2 * e * a.scores(), 2 * a.scores(), 2));
  } else {
    if (layer.attention.dropout)
      cost.kernels.push_back(memory_kernel("dropout bwd", (2 * e + kMaskBytes) * a.scores(), a.scores()));
    // Softmax backward reads P and dP and writes dS; unfused, the mask's and the scale's backward each pass over it.
    const int passes = fused ? 1 : 3;
    cost.kernels.push_back(memory_kernel(fused ? "scale-mask-softmax bwd" : "softmax, mask, scale bwd",
                                         (3 + 2 * (passes - 1)) * e * a.scores(), kSoftmaxFlopsPerScore * a.scores(),
                                         passes));
  }
  cost.kernels.push_back(gemm_kernel(KernelClass::gemm, "bmm dQ = dS K", p, {a.s, a.d, a.s, a.heads}));
  cost.kernels.push_back(gemm_kernel(KernelClass::gemm, "bmm dK = dS^T Q", p, {a.s, a.d, a.s, a.heads}));
  return cost;
}

bool is_attention_core(const models::Layer& layer) {
  return layer.kind == models::LayerKind::attention && layer.attention.sequence > 0;
}

KernelClass gemm_class(models::LayerKind kind) {
  return kind == models::LayerKind::convolution ? KernelClass::convolution : KernelClass::gemm;
}

// The forward GEMM of a matmul or convolution at the micro-batch. A convolution moves its input image, output and
// weights (its implicit GEMM's A matrix is formed on the fly); a matmul its operands.
GemmDims forward_dims(const models::Layer& layer, const CostContext& c) {
  const auto g = models::forward_gemms(layer, c.batch).front();
  GemmDims dims{d(g.m), d(g.n), d(g.k), d(g.count), 0};
  // Y[m x n] = X[m x k] W^T: the weight's n and k lead X, W and Y (the data gradient's too); the rows m (tokens) never
  // do, and the weight gradient's operands are led by the same n and k.
  // A framework that pads the vocabulary keeps an LM head aligned.
  const bool padded = layer.vocabulary_columns && c.framework.pads_vocabulary;
  dims.unaligned =
      layer.kind == models::LayerKind::matmul && !padded && calibration::off_16_bytes({dims.n, dims.k}, c.precision);
  if (layer.kind == models::LayerKind::convolution)
    dims.bytes = ((d(layer.input_elements) + d(layer.output_elements)) * d(c.batch) + d(layer.parameters)) *
                 calibration::activation_bytes(c.precision);
  return dims;
}

// Transformer Engine's fp8 recipe casts a GEMM's 16-bit input to fp8 with its transpose for the weight gradient (read
// 2, write 1 + 1 bytes an element), and in backward the output gradient likewise.
constexpr double kFp8CastBytes = 2 + 1 + 1;
// Tensorwise (current) scaling reads the 16-bit tensor once more for its amax before the cast.
constexpr double kAmaxReadBytes = 2;

// The cast of a 16-bit tensor of `elements` to an fp8 GEMM operand. Delayed scaling scales by the amax history and
// records the tensor's amax in passing: one cast-transpose kernel. Tensorwise scaling (Transformer Engine's
// Float8CurrentScalingQuantizer::quantize_impl, transformer_engine/pytorch/csrc/quantizer.cpp) runs three:
// nvte_compute_amax (R 2), nvte_compute_scale_from_amax, then the cast (the amax all-reduce it adds under sequence
// parallelism, a few bytes over the tensor-parallel group, is not priced).
KernelCost fp8_cast(std::string name, double elements, scenario::Fp8Recipe recipe) {
  const bool tensorwise = recipe == scenario::Fp8Recipe::tensorwise;
  return memory_kernel(std::move(name), (kFp8CastBytes + (tensorwise ? kAmaxReadBytes : 0)) * elements, 0,
                       tensorwise ? 3 : 1);
}

OpCost gemm_forward(const models::Layer& layer, const CostContext& c) {
  const bool conv = layer.kind == models::LayerKind::convolution;
  OpCost cost;
  const GemmDims g = forward_dims(layer, c);
  if (c.precision == Precision::fp8 && !conv)
    cost.kernels.push_back(fp8_cast("fp8 cast-transpose", g.m * g.k * g.count, c.fp8_recipe));
  if (autocast(c) && layer.parameters > 0) // the fp32 weight to 16 bits, once per forward (autocast's cache)
    cost.kernels.push_back(memory_kernel("autocast weight cast", (kFp32Bytes + 2) * d(layer.parameters)));
  cost.kernels.push_back(
      gemm_kernel(gemm_class(layer.kind), conv ? "conv fprop" : std::string(kForwardGemm), c.precision, g));
  cost.kernels.back().winograd = layer.conv3x3_stride1;
  return cost;
}

// Each forward GEMM Y[m x n] = X W gives dX[m x k] = dY W^T and dW[k x n] = X^T dY, whose reduction runs over m; a
// bias's gradient sums dY over the rows (a reduction kernel of its own in PyTorch's and Megatron's linear layers).
OpCost gemm_backward(const models::Layer& layer, const CostContext& c) {
  const bool conv = layer.kind == models::LayerKind::convolution;
  const GemmDims f = forward_dims(layer, c);
  const double e = calibration::activation_bytes(c.precision);
  OpCost cost;
  if (c.precision == Precision::fp8 && !conv)
    cost.kernels.push_back(fp8_cast("fp8 cast-transpose bwd", f.m * f.n * f.count, c.fp8_recipe));
  GemmDims data{f.m, f.k, f.n, f.count, f.bytes, f.unaligned};
  GemmDims weight{f.k, f.n, f.m, f.count, f.bytes, f.unaligned};
  cost.kernels.push_back(
      gemm_kernel(gemm_class(layer.kind), conv ? "conv dgrad" : std::string(kDataGradientGemm), c.precision, data));
  cost.kernels.back().winograd = layer.conv3x3_stride1; // a 3x3, stride-1 convolution of the output's gradient
  cost.kernels.push_back(gemm_kernel(gemm_class(layer.kind), conv ? "conv wgrad" : "gemm wgrad", c.precision, weight));
  cost.kernels.back().winograd = layer.conv3x3_stride1; // cuDNN's Winograd weight gradient (nonfused)
  if (layer.bias) cost.kernels.push_back(memory_kernel("bias grad", f.m * f.n * f.count * e));
  if (autocast(c) && layer.parameters > 0) // the cast's gradient: the 16-bit weight gradient back to fp32
    cost.kernels.push_back(memory_kernel("autocast weight grad cast", (2 + kFp32Bytes) * d(layer.parameters)));
  return cost;
}

// Bytes and kernels of a memory-bound op's forward and backward, per element of its output (N) at e bytes an element.
struct Pass {
  std::string name;
  double bytes_per_element;
  int kernels;
};

// A layer norm's forward reads x and writes y; its backward reads dy and x and writes dx, and the weights' gradient
// reads dy and x again unless the kernel keeps them (Transformer Engine, apex's fast layer norm: a second small launch
// finishes the weights). Activations: read x, write y; backward reads dy and x, writes dx. SwiGLU unfused is act(gate)
// (R 1 W 1) and the product (R 2 W 1), backward the product's two gradients (R 2 W 1 each) and act's (R 2 W 1); fused,
// one kernel each way (R 2 W 1, then R 3 W 2). A residual add reads two, writes one; in backward autograd adds the two
// gradients of the residual stream where it forks (R 2 W 1). Dropout writes its 1-byte mask beside its output.
std::pair<Pass, Pass> memory_passes(MemoryOp op, const calibration::Framework& f, double e) {
  switch (op) {
  case MemoryOp::layer_norm:
    return {{"layer_norm fwd", 2 * e, 1},
            f.fused_layer_norm ? Pass{"layer_norm bwd", 3 * e, 2} : Pass{"layer_norm bwd", 5 * e, 2}};
  case MemoryOp::activation:
    return {{f.fused_bias_activation ? "bias-activation" : "activation", 2 * e, 1},
            {f.fused_bias_activation ? "bias-activation bwd" : "activation bwd", 3 * e, 1}};
  case MemoryOp::gated_activation:
    if (f.fused_bias_activation) return {{"bias-swiglu", 3 * e, 1}, {"bias-swiglu bwd", 5 * e, 1}};
    return {{"silu, mul", 5 * e, 2}, {"mul bwd, silu bwd", 9 * e, 3}};
  case MemoryOp::residual_add:
    return {{"residual add", 3 * e, 1}, {"residual grad add", 3 * e, 1}};
  case MemoryOp::dropout_residual_add:
    if (f.fused_dropout_add)
      return {{"bias-dropout-add", 3 * e + kMaskBytes, 1}, {"dropout bwd, residual grad add", 5 * e + kMaskBytes, 2}};
    return {{"dropout, add", 5 * e + kMaskBytes, 2}, {"dropout bwd, residual grad add", 5 * e + kMaskBytes, 2}};
  default:
    return {{"", 0, 0}, {"", 0, 0}};
  }
}

// Under autocast (above) the residual stream is fp32: a layer norm reads and writes fp32 and its consumer (a linear
// layer) casts its output to 16 bits, backward the cast's gradient to fp32 before the norm's; the residual add reads
// the fp32 stream and the 16-bit branch and writes fp32, backward adds fp32 gradients and casts the branch's to 16
// bits. PyTorch's cross_entropy casts 16-bit logits to fp32 (R e W 4), then log_softmax (R 4 W 4) and nll_loss;
// backward the zeroed gradient (W 4), log_softmax_backward (R 8 W 4) and the cast back (R 4 W e). nullopt: the op
// runs as without autocast.
std::optional<std::pair<Pass, Pass>> autocast_passes(MemoryOp op, const calibration::Framework& f, double e) {
  const double w = kFp32Bytes;
  switch (op) {
  case MemoryOp::layer_norm:
    return std::pair{Pass{"layer_norm fwd (fp32), cast", 2 * w + w + e, 2},
                     Pass{"cast, layer_norm bwd (fp32)", e + w + (f.fused_layer_norm ? 3 : 5) * w, 3}};
  case MemoryOp::residual_add:
    return std::pair{Pass{"residual add (fp32 stream)", w + e + w, 1},
                     Pass{"residual grad add (fp32), cast", 3 * w + w + e, 2}};
  case MemoryOp::dropout_residual_add:
    return std::pair{f.fused_dropout_add ? Pass{"bias-dropout-add (fp32 stream)", e + 2 * w + kMaskBytes, 1}
                                         : Pass{"dropout, add (fp32 stream)", 2 * e + kMaskBytes + e + 2 * w, 2},
                     Pass{"residual grad add (fp32), cast, dropout bwd", 3 * w + w + e + 2 * e + kMaskBytes, 3}};
  case MemoryOp::cross_entropy:
    if (f.fp32_cross_entropy) return std::nullopt; // it casts to fp32 itself
    return std::pair{Pass{"cross_entropy (fp32, autocast)", e + w + 2 * w, 3},
                     Pass{"cross_entropy bwd (fp32), cast", w + 3 * w + w + e, 3}};
  default:
    return std::nullopt;
  }
}

// Softmax cross-entropy over L logits of e bytes. PyTorch's F.cross_entropy: log_softmax (R 1 W 1 per logit) and
// nll_loss; backward nll_loss_backward (W: a zeroed gradient) and log_softmax_backward (R 2 W 1). Megatron's
// vocab-parallel cross-entropy in fp32 (megatron/core/tensor_parallel/cross_entropy.py): the cast (R e W 4, none when
// the logits are fp32), max (R 4), subtract (R 4 W 4), exp (R 4 W 4), sum (R 4), divide (R 4 W 4); backward the
// in-place multiply (R 4 W 4) and the cast back (R 4 W e).
std::pair<Pass, Pass> cross_entropy_passes(const calibration::Framework& f, double e) {
  if (!f.fp32_cross_entropy) return {{"cross_entropy", 2 * e, 2}, {"cross_entropy bwd", 4 * e, 2}};
  const bool cast = e < 4;
  return {{"cross_entropy (fp32)", (cast ? e + 4 : 0) + 32, cast ? 6 : 5},
          {"cross_entropy bwd (fp32)", 8 + (cast ? 4 + e : 0), cast ? 2 : 1}};
}

// The share of the streaming rate the framework's kernel for the op reaches (its norms reduce a row per block, its
// gated activations read the two strided halves of fc1's output): measured per framework, 1 for every other op.
double stream_share(MemoryOp op, const calibration::Framework& f, bool forward) {
  if (op == MemoryOp::layer_norm) return f.layer_norm_share.in(!forward);
  if (op == MemoryOp::gated_activation) return f.gated_activation_share.in(!forward);
  return 1;
}

// A memory-bound op as the framework runs it; ops of no special form read their inputs and write their output in one
// kernel, twice the bytes in backward (the input's gradient from the output's and the saved input).
OpCost memory_op_cost(const models::Layer& layer, const CostContext& c, bool forward) {
  const double e = calibration::activation_bytes(c.precision);
  const double batch = d(c.batch);
  const double weights = layer.kind == models::LayerKind::embedding ? 0 : d(layer.parameters) * e;
  const double flops = layer.forward_flops * batch;
  if (layer.memory_op == MemoryOp::generic) {
    const double bytes = (d(layer.input_elements) + d(layer.output_elements)) * batch * e + weights;
    const std::string name{models::to_string(layer.kind)};
    return {{memory_kernel(forward ? name : name + " bwd", forward ? bytes : 2 * bytes, flops)}};
  }
  const auto autocast_flow = autocast(c) ? autocast_passes(layer.memory_op, c.framework, e) : std::nullopt;
  const auto [fwd, bwd] = autocast_flow                                ? *autocast_flow
                          : layer.memory_op == MemoryOp::cross_entropy ? cross_entropy_passes(c.framework, e)
                                                                       : memory_passes(layer.memory_op, c.framework, e);
  const Pass& pass = forward ? fwd : bwd;
  // The logits the loss reads are its input; everything else is sized by its output.
  const double elements =
      (layer.memory_op == MemoryOp::cross_entropy ? d(layer.input_elements) : d(layer.output_elements)) * batch;
  KernelCost kernel = memory_kernel(pass.name, pass.bytes_per_element * elements + weights, flops, pass.kernels);
  kernel.stream_share = stream_share(layer.memory_op, c.framework, forward);
  return {{std::move(kernel)}};
}

// A matmul or convolution given by its FLOPs alone (a scenario's inline layers): its FLOPs at the class's large-shape
// efficiency, the bytes of its input, output and weights (twice in backward: data and weight gradients).
OpCost unshaped_gemm(const models::Layer& layer, const CostContext& c, bool forward) {
  const double e = calibration::activation_bytes(c.precision);
  const double bytes = (d(layer.input_elements) + d(layer.output_elements)) * d(c.batch) * e + d(layer.parameters) * e;
  KernelCost k;
  k.kind = gemm_class(layer.kind);
  k.precision = c.precision;
  k.name = forward ? "gemm (FLOPs only)" : "gemm bwd (FLOPs only)";
  k.flops = (forward ? layer.forward_flops : layer.backward_flops) * d(c.batch);
  k.bytes = forward ? bytes : 2 * bytes;
  k.kernels = forward ? 1 : 2;
  return {{k}};
}

bool shaped_gemm(const models::Layer& layer, const CostContext& c) {
  return !models::forward_gemms(layer, c.batch).empty();
}

OpCost forward_kernels(const models::Layer& layer, const CostContext& c) {
  if (is_attention_core(layer)) return attention_forward(layer, c);
  if (models::is_gemm_like(layer.kind))
    return shaped_gemm(layer, c) ? gemm_forward(layer, c) : unshaped_gemm(layer, c, true);
  return memory_op_cost(layer, c, true);
}

} // namespace

double OpCost::seconds(const calibration::GpuProfile& gpu) const {
  double total = 0;
  for (const auto& k : kernels)
    total += calibration::kernel_time(gpu, k);
  return total;
}

PricedOp::PricedOp(OpCost op, const calibration::GpuProfile& gpu)
    : cost(std::move(op)), flops(cost.flops()), bytes(cost.bytes()) {
  for (const auto& k : cost.kernels)
    times.push_back(calibration::kernel_timing(gpu, k));
}

calibration::Stretch PricedOp::run(calibration::LaunchTimeline& timeline, detail::KernelTable* table) const {
  calibration::Stretch total;
  for (std::size_t i = 0; i < cost.kernels.size(); ++i) {
    const auto& k = cost.kernels[i];
    if (k.kernels <= 0) continue;
    const double gpu_each = times[i].seconds / k.kernels, host_each = k.host_seconds / k.kernels;
    double added = 0;
    for (int launch = 0; launch < k.kernels; ++launch)
      added += timeline.run(host_each, gpu_each);
    // Below a picosecond the difference is rounding, not a wait.
    const double wait = added - times[i].seconds;
    if (table) table->add(k, times[i], wait > 1e-12 ? wait : 0.0);
    total += {added, times[i].math_seconds, times[i].joules};
  }
  return total;
}

double OpCost::flops() const {
  return std::accumulate(kernels.begin(), kernels.end(), 0.0,
                         [](double s, const KernelCost& k) { return s + k.flops; });
}

double OpCost::bytes() const {
  return std::accumulate(kernels.begin(), kernels.end(), 0.0,
                         [](double s, const KernelCost& k) { return s + k.bytes; });
}

OpCost& OpCost::operator+=(const OpCost& other) {
  kernels.insert(kernels.end(), other.kernels.begin(), other.kernels.end());
  return *this;
}

OpCost split_gemm_rows(OpCost cost, std::string_view kernel, int chunks, const CostContext& c) {
  if (chunks <= 1) return cost;
  for (auto& k : cost.kernels) {
    if (k.name != kernel || k.gemms.size() != 1) continue;
    GemmDims chunk = k.gemms.front();
    chunk.m /= chunks;
    const double host = k.host_seconds + (chunks - 1) * c.framework.host.launch; // one dispatch, a launch a chunk
    k = gemm_kernel(k.kind, k.name, k.precision, chunk);
    k.gemms.assign(static_cast<std::size_t>(chunks), chunk);
    k.flops *= chunks;
    k.bytes *= chunks;
    k.kernels = chunks;
    k.host_seconds = host;
  }
  return cost;
}

CostContext CostContext::of(const scenario::Scenario& s) {
  return {s.model.batch_per_gpu, s.model.precision, s.model.attention,
          s.training.recompute,  s.framework,       s.model.fp8_recipe};
}

OpCost forward_cost(const models::Layer& layer, const CostContext& c) {
  return issued(forward_kernels(layer, c), c, Issuer::python);
}

OpCost backward_cost(const models::Layer& layer, const CostContext& c) {
  OpCost cost;
  // Recomputation reruns the forward from Python (activation checkpointing's forward hook).
  if (c.recompute == scenario::Recompute::full && layer.block >= 0) cost = forward_cost(layer, c);
  OpCost own;
  if (is_attention_core(layer))
    own = attention_backward(layer, c);
  else if (models::is_gemm_like(layer.kind))
    own = shaped_gemm(layer, c) ? gemm_backward(layer, c) : unshaped_gemm(layer, c, false);
  else
    own = memory_op_cost(layer, c, false);
  return cost += issued(std::move(own), c, Issuer::autograd);
}

ModelStateBytes model_state_bytes(scenario::Optimizer optimizer, Precision precision) {
  const double states = 4.0 * (optimizer == scenario::Optimizer::adam       ? 2
                               : optimizer == scenario::Optimizer::momentum ? 1
                                                                            : 0);
  switch (precision) {
  case Precision::fp32:
  case Precision::tf32:
    return {4, 4, 0, states};
  case Precision::amp:
    return {4 + 2, 4, 0, states};
  case Precision::fp16:
  case Precision::bf16:
    return {2, 2, 4, states};
  case Precision::fp8:
    return {2 + 1, 2, 4, states};
  }
  return {4, 4, 0, states};
}

double working_weight_bytes(calibration::Precision precision) {
  return calibration::activation_bytes(precision) == 4 ? 4 : 2;
}

double optimizer_step_bytes(scenario::Optimizer optimizer, Precision precision) {
  const ModelStateBytes m = model_state_bytes(optimizer, precision);
  const double working_copy = m.master > 0 ? calibration::activation_bytes(calibration::Precision::bf16) : 0;
  return m.gradients + 2 * 4 + 2 * m.states + working_copy;
}

namespace {

// One multi-tensor operation over the parameters: its launches (a chunk limit and a tensor limit per launch), issued
// from Python once and launched per chunk group.
KernelCost multi_tensor(std::string name, double parameters, int tensors, double bytes_per_parameter,
                        const CostContext& c) {
  const int launches = static_cast<int>(std::max(
      {1.0, std::ceil(parameters / kElementsPerMultiTensorLaunch), std::ceil(tensors / kTensorsPerMultiTensorLaunch)}));
  KernelCost k = memory_kernel(std::move(name), parameters * bytes_per_parameter, 0, launches);
  k.host_seconds = c.framework.host.python_dispatch + launches * c.framework.host.launch;
  return k;
}

// PyTorch's foreach optimizers (torch/optim/adam.py _multi_tensor_adam, torch/optim/sgd.py _multi_tensor_sgd): one
// pass per step of the update, each reading and writing whole tensors. p and g are the bytes of a weight and of its
// gradient as the optimizer sees them, states 4 bytes (t: Adam's temporary denominator).
std::vector<std::pair<std::string, double>> foreach_passes(scenario::Optimizer optimizer, double p, double g) {
  switch (optimizer) {
  case scenario::Optimizer::adam:
    return {{"adamw weight decay (_foreach_mul_)", 2 * p},
            {"adam m (_foreach_lerp_)", 8 + g},
            {"adam v (_foreach_mul_)", 8},
            {"adam v (_foreach_addcmul_)", 8 + g},
            {"adam t (_foreach_sqrt)", 8},
            {"adam t (_foreach_div_)", 8},
            {"adam t (_foreach_add_)", 8},
            {"adam update (_foreach_addcdiv_)", 2 * p + 8}};
  case scenario::Optimizer::momentum:
    return {{"sgd weight decay (_foreach_add_)", 2 * g + p},
            {"sgd momentum (_foreach_mul_)", 8},
            {"sgd momentum (_foreach_add_)", 8 + g},
            {"sgd update (_foreach_add_)", 2 * p + 4}};
  case scenario::Optimizer::sgd:
    return {{"sgd weight decay (_foreach_add_)", 2 * g + p}, {"sgd update (_foreach_add_)", 2 * p + g}};
  }
  return {};
}

} // namespace

OpCost iteration_passes(double parameters, int tensors, const scenario::Scenario& s) {
  const CostContext c = CostContext::of(s);
  const auto& f = s.framework;
  const Precision p = s.model.precision;
  const bool mixed = model_state_bytes(s.training.optimizer, p).master > 0;
  // Megatron accumulates gradients in a contiguous buffer (main_grad; fp32 for bf16: arguments.py forces
  // accumulate_allreduce_grads_in_fp32) and zeroes it every iteration (zero_grad_buffer); the version says when.
  const double buffer = mixed ? f.gradient_buffer_bytes(p) : 0.0;
  const double grad = buffer > 0 ? buffer : calibration::gradient_bytes(p);
  OpCost cost;
  if (buffer > 0) cost.kernels.push_back(multi_tensor("zero gradient buffer", parameters, 1, buffer, c));
  if (p == Precision::fp16 || p == Precision::amp)
    cost.kernels.push_back(multi_tensor("loss-scale unscale and overflow check", parameters, tensors, 2 * grad, c));
  if (s.clips_gradients()) {
    cost.kernels.push_back(multi_tensor("gradient norm (multi_tensor_l2norm)", parameters, tensors, grad, c));
    // PyTorch's clip_grad_norm_ always multiplies (torch/nn/utils/clip_grad.py avoids the synchronizing test);
    // Megatron scales only when the norm is over the bound, which a converging run rarely is.
    if (f.clip_always_scales)
      cost.kernels.push_back(multi_tensor("gradient clip (_foreach_mul_)", parameters, tensors, 2 * grad, c));
  }
  if (p == Precision::fp8) {
    // Transformer Engine casts each weight to fp8 with its transpose once per iteration. Tensorwise scaling first
    // reads each weight for its amax and sets its scale (the same steps as an activation's). Delayed scaling instead
    // rolls every fp8 tensor's amax history and sets its scale in one fused kernel after forward and after backward
    // (DelayedScaling: amax_history_len 1024; pytorch/quantization.py reduce_and_update_fp8_tensors): three tensors
    // (input, weight, gradient) per fp8 GEMM, taken here as one GEMM per parameter tensor, 1024 fp32 entries each read
    // and written.
    const bool tensorwise = s.model.fp8_recipe == scenario::Fp8Recipe::tensorwise;
    if (tensorwise)
      cost.kernels.push_back(memory_kernel("fp8 weight amax and scale (tensorwise)", kAmaxReadBytes * parameters, 0,
                                           2 * std::max(tensors, 1)));
    cost.kernels.push_back(multi_tensor("fp8 weight cast-transpose", parameters, tensors, kFp8CastBytes, c));
    if (!tensorwise) {
      KernelCost amax =
          memory_kernel("fp8 amax history and scale update", 2 * 2.0 * kAmaxHistory * 4 * 3 * tensors, 0, 2);
      amax.host_seconds = 2 * (c.framework.host.python_dispatch + c.framework.host.launch);
      cost.kernels.push_back(std::move(amax));
    }
  }
  if (f.optimizer == calibration::OptimizerKernels::fused) {
    cost.kernels.push_back(
        multi_tensor(fmt::format("optimizer step ({}, fused)", scenario::to_string(s.training.optimizer)), parameters,
                     tensors, optimizer_step_bytes(s.training.optimizer, p), c));
    return cost;
  }
  // The update runs on fp32 weights: the master copy in mixed precision, the weights themselves otherwise.
  for (const auto& [name, bytes] : foreach_passes(s.training.optimizer, 4, grad))
    cost.kernels.push_back(multi_tensor(name, parameters, tensors, bytes, c));
  return cost;
}

} // namespace dtsim::plan
