#include "calibration/precision.hpp"

#include <array>
#include <utility>

namespace dtsim::calibration {
namespace {

constexpr std::array<std::pair<Precision, std::string_view>, 6> kNames = {{
    {Precision::fp32, "fp32"},
    {Precision::tf32, "tf32"},
    {Precision::fp16, "fp16"},
    {Precision::bf16, "bf16"},
    {Precision::fp8, "fp8"},
    {Precision::amp, "amp"},
}};

} // namespace

std::string_view to_string(Precision p) {
  for (const auto& [value, name] : kNames)
    if (value == p) return name;
  return "unknown"; // unreachable for valid enumerators
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (const auto& [value, text] : kNames)
    if (text == name) return value;
  return std::nullopt;
}

std::vector<std::string> precision_names() {
  std::vector<std::string> names;
  for (const auto& entry : kNames)
    names.emplace_back(entry.second);
  return names;
}

double activation_bytes(Precision p) {
  switch (p) {
  case Precision::fp32:
  case Precision::tf32: // tf32 is a tensor-core math mode; tensors stay fp32 in memory
    return 4;
  case Precision::fp16:
  case Precision::bf16:
  case Precision::amp: // autocast stores the outputs of convolutions and matmuls in fp16
  case Precision::fp8: // bf16 between Transformer Engine's modules
    return 2;
  }
  return 4;
}

double saved_gemm_input_bytes(Precision p) {
  return p == Precision::fp8 ? 1 : activation_bytes(p);
}

double gradient_bytes(Precision p) {
  switch (p) {
  case Precision::fp32:
  case Precision::tf32:
  case Precision::amp: // AMP keeps fp32 master weights, so the all-reduced gradients are fp32
    return 4;
  case Precision::fp16:
  case Precision::bf16:
    return 2;
  case Precision::fp8:
    // fp8 training (e.g. NVIDIA Transformer Engine) runs the GEMMs in fp8 but keeps weights and their
    // gradients in bf16 or fp32; fp8's range is too narrow for gradient all-reduce without per-tensor scaling.
    // v0 takes bf16 (2 bytes), the cheaper of the two real choices, rather than a 1-byte exchange no common
    // framework does.
    return 2;
  }
  return 4;
}

Precision math_precision(Precision p) {
  return p == Precision::amp ? Precision::fp16 : p;
}

Precision attention_precision(Precision p) {
  return p == Precision::fp8 ? Precision::bf16 : math_precision(p);
}

} // namespace dtsim::calibration
