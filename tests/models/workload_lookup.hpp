#pragma once
// Looking layers up in a built model, for the model tests.
#include "models/layer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtsim::models::test {

// The layer named `name`; throws if the model has none (a test then fails with the name).
inline const Layer& find(const Workload& w, const std::string& name) {
  const auto it = std::find_if(w.layers.begin(), w.layers.end(), [&](const Layer& l) { return l.name == name; });
  if (it == w.layers.end()) throw std::runtime_error("no layer " + name);
  return *it;
}

// Multiply-accumulates of the convolutions and matmuls (1 MAC = 2 FLOPs), as torchvision's "GFLOPS" counts them.
inline double gemm_macs(const Workload& w) {
  double macs = 0;
  for (const auto& l : w.layers)
    if (is_gemm_like(l.kind)) macs += l.forward_flops / 2;
  return macs;
}

} // namespace dtsim::models::test
