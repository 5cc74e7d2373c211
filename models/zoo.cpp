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
      // A dense stand-in for the largest network of Coates et al. 2013 ("Deep learning with COTS HPC systems"):
      // 11.2 billion parameters on 200x200-pixel images. Their layers are locally connected, and a locally connected
      // layer, like a dense one, uses each weight once per image (2 FLOPs per parameter forward), so the same
      // parameters give the same FLOPs. One encoder (the 40,000 pixels to 140,000 features) and its decoder (back
      // to the pixels): 2 x 40,000 x 140,000 weights and 180,000 biases, split column then row.
      {"cots-hpc-11b",
       [] {
         return mlp({40'000, 140'000, 40'000}, "cots-hpc-11b");
       }},
      {"resnet50", [] { return resnet50(); }},
      {"resnet101", [] { return resnet(101); }},
      {"resnet152", [] { return resnet(152); }},
      {"vgg16", [] { return vgg16(); }},
      {"inception-v3", [] { return inception_v3(/*aux_logits=*/true); }}, // training computes the aux head
      {"dlrm", [] { return dlrm(dlrm_criteo_kaggle_config(), "dlrm"); }}, // DLRM's Criteo Kaggle benchmark
      {"mf-movielens25m", [] { return mf_movielens25m(); }},
      // Transformers and mixtures of experts; models/transformer.cpp gives each configuration's source.
      {"transformer-wikitext103", [] { return transformer(transformer_spec("transformer-wikitext103")); }},
      {"bert-base", [] { return transformer(transformer_spec("bert-base")); }},
      {"bert-large", [] { return transformer(transformer_spec("bert-large")); }},
      {"gpt2", [] { return transformer(transformer_spec("gpt2")); }},
      {"gpt2-medium", [] { return transformer(transformer_spec("gpt2-medium")); }},
      {"gpt2-large", [] { return transformer(transformer_spec("gpt2-large")); }},
      {"gpt2-xl", [] { return transformer(transformer_spec("gpt2-xl")); }},
      {"gpt3-125m", [] { return transformer(transformer_spec("gpt3-125m")); }},
      {"gpt3-350m", [] { return transformer(transformer_spec("gpt3-350m")); }},
      {"gpt3-1.3b", [] { return transformer(transformer_spec("gpt3-1.3b")); }},
      {"gpt3-2.7b", [] { return transformer(transformer_spec("gpt3-2.7b")); }},
      {"gpt3-6.7b", [] { return transformer(transformer_spec("gpt3-6.7b")); }},
      {"gpt3-13b", [] { return transformer(transformer_spec("gpt3-13b")); }},
      {"gpt3-175b", [] { return transformer(transformer_spec("gpt3-175b")); }},
      {"llama2-7b", [] { return transformer(transformer_spec("llama2-7b")); }},
      {"llama2-13b", [] { return transformer(transformer_spec("llama2-13b")); }},
      {"llama2-70b", [] { return transformer(transformer_spec("llama2-70b")); }},
      {"llama3-8b", [] { return transformer(transformer_spec("llama3-8b")); }},
      {"llama3-70b", [] { return transformer(transformer_spec("llama3-70b")); }},
      {"llama3-405b", [] { return transformer(transformer_spec("llama3-405b")); }},
      {"switch-base", [] { return transformer(transformer_spec("switch-base")); }},
      {"mixtral-8x7b", [] { return transformer(transformer_spec("mixtral-8x7b")); }},
      {"gshard", [] { return transformer(transformer_spec("gshard")); }},
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
