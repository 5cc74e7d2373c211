#pragma once
// Numeric precisions a training job computes in. "amp" is mixed precision as PyTorch AMP does it:
// convolutions and matmuls in fp16 on tensor cores, fp32 master weights and gradients.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::calibration {

enum class Precision : std::uint8_t { fp32, tf32, fp16, bf16, fp8, amp };

std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view name);
std::vector<std::string> precision_names();

// Bytes of one activation (or activation gradient) element as ops hand it on: what memory-bound kernels read and
// write, what a rank keeps for backward outside the GEMMs, and what crosses the wire (tensor- and sequence-parallel
// collectives, pipeline sends, MoE all-to-alls). fp8 training computes its GEMMs in fp8 but Transformer Engine's
// modules take and return tensors in the activation dtype (bf16): fp8 exists only as a GEMM's cast input.
double activation_bytes(Precision p);
// Bytes of an element a GEMM saves of its input for the weight gradient: fp8 under fp8 training (Transformer
// Engine's Linear saves its cast input, pytorch/module/linear.py), the activation's size otherwise.
double saved_gemm_input_bytes(Precision p);
// Bytes of one gradient element as the data-parallel all-reduce sends it (fp32 for amp: master gradients).
double gradient_bytes(Precision p);
// Precision the tensor-core math runs in (amp -> fp16).
Precision math_precision(Precision p);
// Precision attention cores run in: the math precision, except that fp8 training keeps attention in bf16
// (Transformer Engine's default: its fp8 recipe covers the linear layers' GEMMs).
Precision attention_precision(Precision p);

} // namespace dtsim::calibration
