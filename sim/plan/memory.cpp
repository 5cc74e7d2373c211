// Per-GPU memory of plain data parallelism. Every rank holds the whole model:
//   weights      P * w   (w = 4 for fp32/tf32; 2 for fp16/bf16; amp keeps fp32 masters + an fp16 copy: 6)
//   gradients    P * g   (g = gradient_bytes(precision))
//   optimizer    P * 4 * states (momentum: 1 state, Adam: 2, plain SGD: 0), fp32
//   activations  sum over layers of the output elements kept for backward * batch * a, where elementwise
//                layers (ReLU, residual add) count as in place, as torchvision and most models run them:
//                they overwrite their input and save nothing new
//   buckets      P * g   (PyTorch DDP copies gradients into flat bucket buffers)
// ZeRO, recomputation and the transformer activation formula arrive with the memory issue.
#include "calibration/precision.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace dtsim::plan {

using calibration::Precision;

double MemoryEstimate::total() const {
  return std::accumulate(items.begin(), items.end(), 0.0, [](double s, const MemoryItem& i) { return s + i.bytes; });
}

namespace {

double weight_bytes(Precision p) {
  switch (p) {
  case Precision::amp:
    return 6;
  case Precision::fp16:
  case Precision::bf16:
  case Precision::fp8:
    return 2;
  default:
    return 4;
  }
}

double optimizer_states(scenario::Optimizer o) {
  switch (o) {
  case scenario::Optimizer::sgd:
    return 0;
  case scenario::Optimizer::momentum:
    return 1;
  case scenario::Optimizer::adam:
    return 2;
  }
  return 0;
}

} // namespace

MemoryEstimate estimate_memory(const scenario::Scenario& s) {
  const auto& workload = s.model.workload;
  const auto precision = s.model.precision;
  const double params = static_cast<double>(workload.parameter_count());
  double saved_elements = 0;
  for (const auto& layer : workload.layers)
    if (layer.kind != models::LayerKind::elementwise) saved_elements += static_cast<double>(layer.output_elements);

  MemoryEstimate m;
  m.capacity = s.gpu.memory_bytes;
  m.items = {
      {"weights", params * weight_bytes(precision)},
      {"gradients", params * calibration::gradient_bytes(precision)},
      {"optimizer states", params * 4 * optimizer_states(s.training.optimizer)},
      {"activations", saved_elements * s.model.batch_per_gpu * calibration::activation_bytes(precision)},
  };
  if (s.world_size() > 1) m.items.push_back({"gradient buckets", params * calibration::gradient_bytes(precision)});
  return m;
}

} // namespace dtsim::plan
