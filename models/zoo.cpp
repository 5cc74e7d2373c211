#include "models/zoo.hpp"

#include <functional>
#include <map>

namespace dtsim::models {
namespace {

// std::map keeps the names sorted, as preset_names() promises.
const std::map<std::string, std::function<Workload()>>& presets() {
  static const std::map<std::string, std::function<Workload()>> table = {
      {"mlp-small",
       [] {
         return mlp({784, 1024, 1024, 10}, "mlp-small");
       }}, // MNIST-sized input, 10 classes
      {"resnet50", [] { return resnet50(); }},
  };
  return table;
}

} // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, build] : presets())
    names.push_back(name);
  return names;
}

std::optional<Workload> build_preset(const std::string& name) {
  const auto it = presets().find(name);
  if (it == presets().end()) return std::nullopt;
  return it->second();
}

} // namespace dtsim::models
