#pragma once
// A training framework as the cost model sees it: which memory-bound kernels it fuses, how its optimizer streams the
// parameters, whether it clips gradients every iteration, and what its host costs to issue a kernel. Presets live in
// calibration/frameworks/*.json, each with its sources (the frameworks' own code and published measurements).
#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

// How the optimizer step streams the parameters: one fused multi-tensor kernel, or one multi-tensor pass per
// arithmetic step (PyTorch's foreach implementation).
enum class OptimizerKernels : std::uint8_t { fused, foreach };

// CPU time to issue work to the GPU.
struct HostCosts {
  double python_dispatch = 0; // seconds per framework op issued from Python (forward passes, the optimizer)
  double cpp_dispatch = 0;    // seconds per op issued from C++ (autograd's backward)
  double launch = 0;          // seconds per kernel launch (cudaLaunchKernel)
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
  OptimizerKernels optimizer = OptimizerKernels::fused;
  bool clip_gradients = false; // clips by the global gradient norm by default
};

// A preset by name ("megatron", "pytorch-ddp", "deepspeed"); nullopt for another name. Throws CalibrationError when
// the shipped file does not parse.
std::optional<Framework> find_framework(const std::string& name);
std::vector<std::string> framework_names();
// Parses one framework document; `origin` names the file in error messages. Throws CalibrationError.
Framework parse_framework(const std::string& json_text, const std::string& origin);

} // namespace dtsim::calibration
