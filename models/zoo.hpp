#pragma once
// Model presets by name, and a builder for inline layer lists.
#include "models/layer.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dtsim::models {

// Known preset names, sorted; used for validation and did-you-mean suggestions.
std::vector<std::string> preset_names();
// The preset's layer table, or nullopt if there is no preset of that name.
std::optional<Workload> build_preset(const std::string& name);

// ResNet-50 v1.5 for 224x224 RGB images (He et al. 2016; torchvision's layout): 25,557,032 parameters.
Workload resnet50(int image_size = 224, int classes = 1000);
// A plain multi-layer perceptron: Linear(widths[i] -> widths[i+1]) + ReLU between layers. For fast tests.
Workload mlp(const std::vector<int>& widths, std::string name = "mlp");

} // namespace dtsim::models
