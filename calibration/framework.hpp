#pragma once
// A training framework, at a version, as the cost model sees it: the kernels it runs (which memory-bound ones it fuses,
// unfused or fused attention, how its optimizer streams the parameters), its habits (gradients clipped every
// iteration, the precision gradients are reduced in, what it can overlap with backward), and what its host costs to
// issue a kernel. A version is a list of kernels and habits, never an efficiency factor. Presets live in
// calibration/frameworks/*.json, each with its sources (that version's own code and release notes).
#include "calibration/precision.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::calibration {

// How the optimizer step streams the parameters: one fused multi-tensor kernel, or one multi-tensor pass per
// arithmetic step (PyTorch's foreach implementation).
enum class OptimizerKernels : std::uint8_t { fused, foreach };

// The attention core a version runs unless the scenario names one: its own unfused kernels (batched GEMMs and a
// softmax); a fused kernel (FlashAttention-2) where the GPU has one; or, as Transformer Engine's DotProductAttention
// chooses, cuDNN's fused attention on Hopper and newer GPUs whose profile rates it, FlashAttention-2 elsewhere.
enum class AttentionImpl : std::uint8_t { unfused, fused, cudnn };

// The precision a version reduces gradients in: as trained (the gradients' own: fp16, bf16, or fp32 under autocast);
// bf16 and fp8 training's in fp32 (Megatron-LM keeps an fp32 main_grad buffer for them; fp16's stays fp16); or every
// gradient in fp32 (FSDP's mixed precision with reduce_dtype float32).
enum class GradientReduce : std::uint8_t { as_trained, bf16_in_fp32, fp32 };

// Whether a version reduces gradients while backward runs: it cannot (no such option in that version), it can when
// asked (off by default), it does by default (PyTorch DDP's buckets), or it does by default only under ZeRO-3
// (DeepSpeed's overlap_comm).
enum class ReduceDuringBackward : std::uint8_t { never, off, on, zero3 };

// Whether a version accumulates gradients in a contiguous buffer it zeroes every iteration (Megatron-LM's main_grad):
// never, only when it reduces in fp32 (Megatron-LM 2021, where fp32 accumulation forces contiguous buffers on), or
// always.
enum class GradientBuffer : std::uint8_t { none, when_fp32, always };
// When sharded data parallelism (FSDP, ZeRO-3) gathers the next unit's weights in backward: as this unit's gradient
// computation starts (PyTorch FSDP's BackwardPrefetch.BACKWARD_PRE), so the gather runs beside it, or once it is over
// (BACKWARD_POST), so the next unit waits for its gather.
enum class BackwardPrefetch : std::uint8_t { pre, post };

// How a version cuts a model into pipeline chunks unless the scenario lists them: balanced by the units' time (dtsim's
// planner; HetPipe sizes stages by speed), or uniform: the same number of transformer blocks in every chunk, the
// embedding riding with the first and the LM head and loss with the last (Megatron-LM's num_layers // (pipeline x
// virtual stages)), balanced only where the blocks do not divide.
enum class PipelineSplit : std::uint8_t { balanced, uniform };

// CPU time to issue work to the GPU.
struct HostCosts {
  double python_dispatch = 0; // seconds per framework op issued from Python (forward passes, the optimizer)
  double cpp_dispatch = 0;    // seconds per op issued from C++ (autograd's backward)
  double launch = 0;          // seconds per kernel launch (cudaLaunchKernel)
};

// The share of a GPU's streaming rate a framework's kernel for one memory-bound op reaches, forward and backward
// (calibration::KernelCost::stream_share): 1 where it streams, or where no measurement of that implementation exists.
struct StreamShare {
  double forward = 1;
  double backward = 1;
  double in(bool backward_pass) const { return backward_pass ? backward : forward; }
};

struct Framework {
  std::string name;
  std::string display_name;
  std::vector<std::string> sources;
  HostCosts host;
  bool fused_bias_activation = false; // a linear layer's bias and its activation (GeLU, SwiGLU) in one kernel
  bool fused_dropout_add = false;     // bias, dropout and residual add in one kernel
  bool fused_softmax = false;         // an unfused attention's scale, mask and softmax in one kernel
  bool fused_layer_norm = false;      // a layer norm's backward reads the gradient and the input once, not twice
  bool fp32_cross_entropy = false;    // the loss upcasts the logits and works on them in fp32 (Megatron's)
  // Measured shares of the streaming rate its layer norms and gated activations reach (a row reduction per block,
  // the strided halves of one tensor): op-level measurements of that implementation, cited in its file.
  StreamShare layer_norm_share;
  StreamShare gated_activation_share;
  // The share of the op named as the document names it ("layer_norm", "gated_activation"); nullptr for another name.
  const StreamShare* stream_share(std::string_view op) const {
    return op == "layer_norm" ? &layer_norm_share : op == "gated_activation" ? &gated_activation_share : nullptr;
  }
  // The fused softmax kernel applies up to this many keys (Megatron-LM's custom kernel: 2048 in 2021, 4096 in 2022);
  // longer attention falls back to PyTorch's softmax. 0: no limit.
  double fused_softmax_max_keys = 0;
  AttentionImpl attention = AttentionImpl::fused;
  OptimizerKernels optimizer = OptimizerKernels::fused;
  bool clip_gradients = false; // clips by the global gradient norm by default
  GradientReduce gradient_reduce = GradientReduce::as_trained;
  ReduceDuringBackward reduce_during_backward = ReduceDuringBackward::on;
  bool distributed_optimizer = true; // can shard optimizer states (ZeRO, Megatron's distributed optimizer)
  GradientBuffer gradient_buffer = GradientBuffer::none;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::pre;
  // Clipping scales every gradient every iteration (PyTorch's clip_grad_norm_ multiplies without testing the norm),
  // or only when the norm is over the bound (Megatron-LM), which a converging run rarely is.
  bool clip_always_scales = true;
  // Pads the vocabulary to a multiple of 128 x the tensor-parallel size (Megatron-LM's --make-vocab-size-divisible-by),
  // so an LM head's GEMMs stay aligned whatever the tokenizer's size (the padded columns' FLOPs are not counted).
  bool pads_vocabulary = false;
  // Horovod's tensor fusion (horovod/common/operations.cc, controller.cc): a background thread wakes every
  // `fusion_cycle` seconds and all-reduces the gradients ready on every rank since its last wake, fused into buffers of
  // at most `fusion_threshold` bytes. 0: PyTorch DDP's buckets (training.bucket_size) instead.
  double fusion_cycle = 0;
  double fusion_threshold = 0;
  // Whether it overlaps a pipeline's sends and receives with compute by default under the interleaved schedule
  // (Megatron-LM's overlap_p2p_comm): each receive is posted as the last send in its direction goes out and waited on
  // only where its data is needed. Megatron-LM does this for no other schedule.
  bool overlap_p2p = false;
  PipelineSplit pipeline_split = PipelineSplit::balanced;
  // Whether the softmax of `keys` keys runs in the fused kernel.
  bool fuses_softmax(double keys) const {
    return fused_softmax && (fused_softmax_max_keys <= 0 || keys <= fused_softmax_max_keys);
  }
  // Bytes of one gradient element as this version reduces it, for training at `precision`.
  double reduced_gradient_bytes(Precision precision) const;
  // Bytes of one element of the gradient buffer it zeroes every iteration; 0: it keeps none.
  double gradient_buffer_bytes(Precision precision) const;
};

// A preset by name or alias ("megatron-2021", "megatron", "pytorch-ddp"); nullopt for another name. Throws
// CalibrationError when the shipped file does not parse.
std::optional<Framework> find_framework(const std::string& name);
std::vector<std::string> framework_names(); // every preset's name, aliases included
// Parses one framework document; `origin` names the file in error messages. Throws CalibrationError.
Framework parse_framework(const std::string& json_text, const std::string& origin);

} // namespace dtsim::calibration
