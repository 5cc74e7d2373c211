#pragma once
// Model presets by name, and a builder for inline layer lists.
#include "models/layer.hpp"
#include "models/transformer.hpp" // transformer(), transformer_spec(): the transformer presets

#include <cstdint>
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
// ResNet v1.5 of depth 50, 101 or 152 (torchvision's resnet50/101/152): 25,557,032, 44,549,160 and 60,192,808
// parameters. Named "resnet<depth>".
Workload resnet(int depth, int image_size = 224, int classes = 1000);
// VGG-16 (Simonyan and Zisserman 2015, configuration D; torchvision's vgg16, no batch norm): 138,357,544
// parameters.
Workload vgg16(int image_size = 224, int classes = 1000);
// Inception-v3 for 299x299 images (Szegedy et al. 2016; torchvision's inception_v3). With the auxiliary
// classifier, as trained: 27,161,264 parameters; without it: 23,834,568.
Workload inception_v3(bool aux_logits = true, int image_size = 299, int classes = 1000);

// A DLRM (Naumov et al. 2019): dense features -> bottom MLP; one embedding table per categorical feature;
// pairwise dot products of the bottom MLP output and the embeddings; top MLP on [dense, interactions].
struct DlrmConfig {
  std::int64_t dense_features = 13;
  std::vector<std::int64_t> table_rows; // one table per categorical feature
  std::int64_t embedding_dim = 16;      // also the bottom MLP's last width
  std::vector<std::int64_t> bottom_mlp; // output widths, input = dense_features
  std::vector<std::int64_t> top_mlp;    // output widths, input = dim + pairs of (tables + 1) vectors
  std::int64_t lookups_per_table = 1;   // rows each sample sums per table (multi-hot pooling)
};
// DLRM's Criteo Kaggle benchmark (facebookresearch/dlrm bench/dlrm_s_criteo_kaggle.sh): 13 dense features, 26
// tables with the Kaggle cardinalities, dim 16, bottom 13-512-256-64-16, top 367-512-256-1.
DlrmConfig dlrm_criteo_kaggle_config();
Workload dlrm(const DlrmConfig& config, std::string name = "dlrm");
// Matrix factorization: rating = user vector . item vector, two embedding tables with sparse gradients.
Workload matrix_factorization(std::int64_t users, std::int64_t items, std::int64_t dim, std::string name = "mf");
// Matrix factorization on MovieLens-25M: 162,541 users, 59,047 rated movies, 64 factors.
Workload mf_movielens25m();
// A plain multi-layer perceptron: Linear(widths[i] -> widths[i+1]) + ReLU between layers. For fast tests, and for
// tensor parallelism: its linear layers split in column-then-row pairs as Megatron-LM splits a transformer's MLP.
Workload mlp(const std::vector<int>& widths, std::string name = "mlp");

} // namespace dtsim::models
