// Kernels per layer (sim/plan/op_cost.hpp), attention plain and fused, by hand on a round-number GPU.
#include "sim/plan/op_cost.hpp"

#include <gtest/gtest.h>

namespace dtsim::plan {
namespace {

using calibration::KernelClass;
using calibration::Precision;
using scenario::AttentionKernel;
using scenario::Recompute;

// 100 TFLOP/s fp16; GEMMs at 80%, fused attention at 50%; 1 TB/s at 100%; no launch cost; no SM count (no waves).
calibration::GpuProfile round_gpu() {
  calibration::GpuProfile g;
  g.name = "round";
  g.peak_flops = {{Precision::fp32, 10e12}, {Precision::fp16, 100e12}};
  g.gemm_efficiency = {{Precision::fp32, 1}, {Precision::fp16, 0.8}};
  g.conv_efficiency = g.gemm_efficiency;
  g.attention_efficiency = {{Precision::fp16, 0.5}};
  g.memory_bandwidth = 1e12;
  g.memory_efficiency = 1;
  return g;
}

// One attention core: s 1024, 16 heads of 64 (h 1024), with dropout; causal as given.
models::Layer core(bool causal) {
  models::Layer l;
  l.name = "core";
  l.kind = models::LayerKind::attention;
  const double s = 1024, h = 1024;
  l.forward_flops = 4 * s * s * h;
  l.backward_flops = 2 * l.forward_flops;
  l.input_elements = 3 * 1024 * 1024;
  l.output_elements = 1024 * 1024;
  l.attention = {1024, 16, 64, causal, true};
  l.block = 0;
  return l;
}

// Megatron-LM's fusions: the scale, mask and softmax in one kernel.
calibration::Framework fused() {
  calibration::Framework f;
  f.fused_softmax = true;
  return f;
}

CostContext context(AttentionKernel a, Recompute r = Recompute::none, calibration::Framework f = fused()) {
  return {2, Precision::fp16, a, r, f};
}

// Unfused forward: Q K^T, softmax, dropout, P V. b = 2, so 32 head-samples and 32 x 1024^2 = 33.5M scores.
// Softmax moves 2 x 2 B per score, dropout 2 x 2 + 1 B. The GEMMs do 4 s^2 d = 4 x 1024^2 x 64 FLOPs per head-sample
// in all, each moving its A, B and C at 2 B.
TEST(AttentionCost, UnfusedForwardByHand) {
  const auto cost = forward_cost(core(true), context(AttentionKernel::plain));
  ASSERT_EQ(cost.kernels.size(), 4u);
  const double scores = 32.0 * 1024 * 1024;
  EXPECT_EQ(cost.kernels[0].kind, KernelClass::gemm);
  EXPECT_DOUBLE_EQ(cost.kernels[1].bytes, 4 * scores);
  EXPECT_DOUBLE_EQ(cost.kernels[2].bytes, 5 * scores);
  EXPECT_DOUBLE_EQ(cost.flops(), 4.0 * 1024 * 1024 * 64 * 32 + 5 * scores + scores);
  // Q K^T: (s d + d s) inputs and s s output per head-sample, 2 B each.
  EXPECT_DOUBLE_EQ(cost.kernels[0].bytes, (2.0 * 1024 * 64 + 1024.0 * 1024) * 32 * 2);
  // Time: each GEMM's FLOPs at 80 TFLOP/s or its bytes at 1 TB/s, whichever is longer, plus the two memory kernels.
  const auto gpu = round_gpu();
  const double gemm_flops = 2.0 * 1024 * 1024 * 64 * 32;
  const double qk = std::max(gemm_flops / 80e12, cost.kernels[0].bytes / 1e12);
  const double pv = std::max(gemm_flops / 80e12, cost.kernels[3].bytes / 1e12);
  EXPECT_NEAR(cost.seconds(gpu), qk + 4 * scores / 1e12 + 5 * scores / 1e12 + pv, 1e-12);
}

// Eager PyTorch scales, masks and normalizes the scores in three kernels, each reading and writing them (3 x 4 B per
// score), and in backward passes over them three times (softmax 3 x 2 B, the mask's and the scale's 2 x 2 B each).
TEST(AttentionCost, UnfusedSoftmaxMovesTheScoresThreeTimes) {
  const double scores = 32.0 * 1024 * 1024;
  const auto eager = context(AttentionKernel::plain, Recompute::none, calibration::Framework{});
  const auto forward = forward_cost(core(true), eager);
  EXPECT_EQ(forward.kernels[1].kernels, 3);
  EXPECT_DOUBLE_EQ(forward.kernels[1].bytes, 3 * 4 * scores);
  const auto backward = backward_cost(core(true), eager);
  const auto& softmax = backward.kernels[3];
  EXPECT_EQ(softmax.kernels, 3);
  EXPECT_DOUBLE_EQ(softmax.bytes, (3 + 2 + 2) * 2 * scores);
  EXPECT_DOUBLE_EQ(backward_cost(core(true), context(AttentionKernel::plain)).kernels[3].bytes, 3 * 2 * scores);
}

// Fused: one kernel of the two GEMMs' FLOPs at 50 TFLOP/s, halved by the causal mask; it reads Q, K, V and writes
// the output (4 x 1024^2 elements per sample at 2 B), far below its compute time.
TEST(AttentionCost, FlashForwardSkipsTheMaskedHalf) {
  const auto gpu = round_gpu();
  const double flops = 4.0 * 1024 * 1024 * 64 * 32;
  const auto full = forward_cost(core(false), context(AttentionKernel::flash));
  ASSERT_EQ(full.kernels.size(), 1u);
  EXPECT_EQ(full.kernels[0].kind, KernelClass::attention);
  EXPECT_DOUBLE_EQ(full.kernels[0].bytes, 4.0 * 1024 * 1024 * 2 * 2);
  EXPECT_DOUBLE_EQ(full.seconds(gpu), flops / 50e12);
  EXPECT_DOUBLE_EQ(forward_cost(core(true), context(AttentionKernel::flash)).seconds(gpu), flops / 2 / 50e12);
}

// cuDNN's fused attention runs the same algorithm as FlashAttention-2 (the same FLOPs and bytes, the masked half
// skipped) at its own measured rate: 0.8 of the 100 TFLOP/s peak against FlashAttention-2's 0.5, so 80 TFLOP/s.
TEST(AttentionCost, CudnnRunsTheSameKernelAtItsOwnRate) {
  auto gpu = round_gpu();
  gpu.cudnn_attention_efficiency = {{Precision::fp16, 0.8}};
  const double flops = 4.0 * 1024 * 1024 * 64 * 32;
  const auto cudnn = forward_cost(core(true), context(AttentionKernel::cudnn));
  ASSERT_EQ(cudnn.kernels.size(), 1u);
  EXPECT_EQ(cudnn.kernels[0].kind, KernelClass::cudnn_attention);
  EXPECT_EQ(cudnn.kernels[0].name, "cudnn attention fwd");
  const auto flash = forward_cost(core(true), context(AttentionKernel::flash));
  EXPECT_DOUBLE_EQ(cudnn.flops(), flash.flops());
  EXPECT_DOUBLE_EQ(cudnn.kernels[0].bytes, flash.kernels[0].bytes);
  EXPECT_DOUBLE_EQ(cudnn.seconds(gpu), flops / 2 / 80e12);
  EXPECT_DOUBLE_EQ(backward_cost(core(true), context(AttentionKernel::cudnn)).seconds(gpu), 2.5 * flops / 2 / 80e12);
}

// FlashAttention-2's backward recomputes the scores: five GEMMs to the forward's two (2.5x its FLOPs). The unfused
// backward does the model's 2x; selective recomputation adds the forward's Q K^T, softmax and dropout kernels.
TEST(AttentionCost, BackwardFlops) {
  const double forward_gemms = 4.0 * 1024 * 1024 * 64 * 32;
  EXPECT_DOUBLE_EQ(backward_cost(core(false), context(AttentionKernel::flash)).flops(), 2.5 * forward_gemms);
  const auto plain = backward_cost(core(false), context(AttentionKernel::plain));
  const double scores = 32.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(plain.flops(), 2 * forward_gemms + scores /*dropout*/ + 5 * scores /*softmax*/);
  const auto selective = backward_cost(core(false), context(AttentionKernel::plain, Recompute::selective));
  EXPECT_EQ(selective.kernels.size(), plain.kernels.size() + 3);
  EXPECT_DOUBLE_EQ(selective.flops() - plain.flops(), forward_gemms / 2 + 5 * scores + scores);
}

// Full recomputation reruns the forward of ops inside a block, not of the embedding or the head.
TEST(AttentionCost, FullRecomputeRerunsBlockForwards) {
  const auto gpu = round_gpu();
  auto layer = core(false);
  const auto ctx = context(AttentionKernel::flash, Recompute::full);
  const double with = backward_cost(layer, ctx).seconds(gpu);
  const double plain = backward_cost(layer, context(AttentionKernel::flash)).seconds(gpu);
  EXPECT_DOUBLE_EQ(with, plain + forward_cost(layer, ctx).seconds(gpu));
  layer.block = -1;
  EXPECT_DOUBLE_EQ(backward_cost(layer, ctx).seconds(gpu), plain);
}

// Attention runs in bf16 in fp8 training (Transformer Engine's default), in fp16 under amp.
TEST(AttentionCost, AttentionPrecision) {
  EXPECT_EQ(calibration::attention_precision(Precision::fp8), Precision::bf16);
  EXPECT_EQ(calibration::attention_precision(Precision::amp), Precision::fp16);
  EXPECT_EQ(calibration::attention_precision(Precision::tf32), Precision::tf32);
}

// A linear layer's weight (n out x k in) leads its GEMMs' operands: an odd vocabulary of 50,257 sends the forward,
// the data gradient and the weight gradient to the profile's unaligned ceiling (0.2 here: 1e12 FLOPs at 20 TFLOP/s,
// 0.05 s, against 0.0125 s at 80); rows (tokens) of any count, as an expert's share of a micro-batch, do not.
TEST(GemmCost, UnalignedWeightsSlowAllThreeGemms) {
  auto gpu = round_gpu();
  gpu.gemm_unaligned_efficiency = {{Precision::fp16, 0.2}};
  const auto linear = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    models::Layer l;
    l.name = "head";
    l.kind = models::LayerKind::matmul;
    l.gemm = {m, n, k, 1};
    l.forward_flops = 2.0 * static_cast<double>(m * n * k);
    return l;
  };
  CostContext c{1, Precision::fp16, AttentionKernel::plain, Recompute::none, fused()};
  // 2 x 12,800 x 50,257 x 768 = 9.881e11 FLOPs a GEMM, at 20 TFLOP/s (the bytes take less).
  const auto odd = linear(12800, 50257, 768);
  const double flops = 2.0 * 12800 * 50257 * 768;
  const auto forward = forward_cost(odd, c);
  EXPECT_TRUE(forward.kernels[0].gemms[0].unaligned);
  EXPECT_NEAR(forward.seconds(gpu), std::max(flops / 20e12, forward.kernels[0].bytes / 1e12), 1e-12);
  const auto backward = backward_cost(odd, c);
  ASSERT_EQ(backward.kernels.size(), 2u);
  for (const auto& k : backward.kernels)
    EXPECT_NEAR(calibration::kernel_time(gpu, k), std::max(flops / 20e12, k.bytes / 1e12), 1e-12) << k.name;
  // Megatron-LM pads the vocabulary (--make-vocab-size-divisible-by): as an LM head, the same GEMM stays aligned.
  auto head = odd;
  head.vocabulary_columns = true;
  auto megatron = c;
  megatron.framework.pads_vocabulary = true;
  EXPECT_FALSE(forward_cost(head, megatron).kernels[0].gemms[0].unaligned);
  EXPECT_TRUE(forward_cost(head, c).kernels[0].gemms[0].unaligned);
  // 12,801 rows against an aligned 4096 x 4096 weight: 80 TFLOP/s.
  const auto rows = linear(12801, 4096, 4096);
  const auto aligned = forward_cost(rows, c);
  EXPECT_FALSE(aligned.kernels[0].gemms[0].unaligned);
  EXPECT_NEAR(aligned.seconds(gpu), 2.0 * 12801 * 4096 * 4096 / 80e12, 1e-12);
}

// Autocast (fp32 parameters under torch.autocast, PyTorch's AMP op reference): the scores leave Q K^T in 16 bits; the
// scale and the mask pass over them there (2 x 2 x 2 B), the softmax casts them to fp32 and normalizes in fp32
// (R 2 W 4, then R 4 W 4: 14 B), dropout runs on fp32 (R 4 W 4 and its 1-byte mask: 9 B), and P V casts them back
// (R 4 W 2: 6 B): 37 B a score in 6 kernels where a 16-bit flow moves 17 in 4. Backward: dP to fp32 (6 B), dropout
// (9), softmax in fp32 and its cast back (R 8 W 4, then R 4 W 2: 18), mask and scale (8).
TEST(AttentionCost, AutocastRunsTheSoftmaxInFp32BetweenCasts) {
  const double scores = 32.0 * 1024 * 1024;
  CostContext eager{2, Precision::amp, AttentionKernel::plain, Recompute::none, calibration::Framework{}};
  const auto forward = forward_cost(core(true), eager);
  double bytes = 0;
  int kernels = 0;
  for (const auto& k : forward.kernels)
    if (k.kind == KernelClass::memory) bytes += k.bytes, kernels += k.kernels;
  EXPECT_DOUBLE_EQ(bytes, (8 + 14 + 9 + 6) * scores);
  EXPECT_EQ(kernels, 6);
  bytes = 0;
  for (const auto& k : backward_cost(core(true), eager).kernels)
    if (k.kind == KernelClass::memory) bytes += k.bytes;
  EXPECT_DOUBLE_EQ(bytes, (6 + 9 + 18 + 8) * scores);
}

// Under autocast a linear layer casts its fp32 weight to 16 bits once a forward (R 4 W 2 a parameter) and the
// weight's 16-bit gradient back to fp32 in backward (R 2 W 4); a layer norm on the fp32 residual stream reads and
// writes fp32 and its consumer casts the output (R 4 W 4, then R 4 W 2: 14 B an element where 16 bits move 4).
TEST(GemmCost, AutocastCastsWeightsAndNormsOutputs) {
  models::Layer linear;
  linear.name = "fc";
  linear.kind = models::LayerKind::matmul;
  linear.gemm = {1024, 4096, 1024, 1};
  linear.parameters = 4096 * 1024;
  linear.forward_flops = 2.0 * 1024 * 4096 * 1024;
  CostContext amp{1, Precision::amp, AttentionKernel::plain, Recompute::none, calibration::Framework{}};
  const auto cast_bytes = [](const OpCost& cost) {
    double bytes = 0;
    for (const auto& k : cost.kernels)
      if (k.kind == KernelClass::memory) bytes += k.bytes;
    return bytes;
  };
  EXPECT_DOUBLE_EQ(cast_bytes(forward_cost(linear, amp)), 6.0 * 4096 * 1024);
  EXPECT_DOUBLE_EQ(cast_bytes(backward_cost(linear, amp)), 6.0 * 4096 * 1024);
  CostContext bf16 = amp;
  bf16.precision = Precision::bf16;
  EXPECT_DOUBLE_EQ(cast_bytes(forward_cost(linear, bf16)), 0);

  models::Layer norm;
  norm.name = "ln";
  norm.kind = models::LayerKind::normalization;
  norm.memory_op = models::MemoryOp::layer_norm;
  norm.input_elements = norm.output_elements = 1024 * 1024;
  EXPECT_DOUBLE_EQ(forward_cost(norm, amp).kernels.at(0).bytes, 14.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(forward_cost(norm, bf16).kernels.at(0).bytes, 4.0 * 1024 * 1024);
}

} // namespace
} // namespace dtsim::plan
