// DLRM (Criteo Kaggle benchmark configuration of facebookresearch/dlrm) and matrix factorization on MovieLens-25M:
// embedding tables by hand (rows x dim, sparse gradients, no GEMM), the dot interaction by hand.
#include "models/zoo.hpp"

#include "tests/models/workload_lookup.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace dtsim::models {
namespace {

using test::find;

std::vector<const Layer*> embeddings(const Workload& w) {
  std::vector<const Layer*> out;
  for (const auto& l : w.layers)
    if (l.kind == LayerKind::embedding) out.push_back(&l);
  return out;
}

// The 26 Criteo Kaggle cardinalities, as DLRM's Kaggle runs use them.
constexpr std::int64_t kKaggleRows[] = {1460,  583,  10131227, 2202608, 305, 24,     12517,   633,   3,
                                        93145, 5683, 8351593,  3194,    27,  14992,  5461306, 10,    5652,
                                        2173,  4,    7046547,  18,      15,  286181, 105,     142572};

TEST(Dlrm, KaggleConfigurationIsTheBenchmarkScripts) {
  const DlrmConfig c = dlrm_criteo_kaggle_config();
  EXPECT_EQ(c.dense_features, 13);
  EXPECT_EQ(c.embedding_dim, 16);
  EXPECT_EQ(c.bottom_mlp, (std::vector<std::int64_t>{512, 256, 64, 16}));
  EXPECT_EQ(c.top_mlp, (std::vector<std::int64_t>{512, 256, 1}));
  EXPECT_EQ(c.table_rows, std::vector<std::int64_t>(std::begin(kKaggleRows), std::end(kKaggleRows)));
}

TEST(Dlrm, EmbeddingTablesAreRowsTimesDimWithSparseGradients) {
  const Workload w = dlrm(dlrm_criteo_kaggle_config());
  const auto tables = embeddings(w);
  ASSERT_EQ(tables.size(), 26u);
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const Layer& t = *tables[k];
    EXPECT_EQ(t.name, "emb_l." + std::to_string(k));
    EXPECT_EQ(t.parameters, kKaggleRows[k] * 16) << t.name;
    EXPECT_TRUE(t.sparse_gradient) << t.name;
    EXPECT_EQ(t.gemm.m * t.gemm.n * t.gemm.k, 0) << t.name << ": a lookup is not a GEMM";
    EXPECT_FALSE(is_gemm_like(t.kind));
    // One row of 16 read and 16 written per sample, whatever the table's size; one lookup sums nothing.
    EXPECT_EQ(t.input_elements, 16) << t.name;
    EXPECT_EQ(t.output_elements, 16) << t.name;
    EXPECT_DOUBLE_EQ(t.forward_flops, 0.0) << t.name;
  }
  EXPECT_EQ(find(w, "emb_l.2").parameters, 162'099'632); // 10,131,227 x 16, the largest table
  for (const auto& l : w.layers)
    if (l.kind != LayerKind::embedding) {
      EXPECT_FALSE(l.sparse_gradient) << l.name;
    }
}

TEST(Dlrm, ParameterCountByHand) {
  const Workload w = dlrm(dlrm_criteo_kaggle_config());
  const std::int64_t rows = std::accumulate(std::begin(kKaggleRows), std::end(kKaggleRows), std::int64_t{0});
  EXPECT_EQ(rows, 33'762'577);
  const std::int64_t bottom = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 64 + 64) + (64 * 16 + 16);
  const std::int64_t top = (367 * 512 + 512) + (512 * 256 + 256) + (256 * 1 + 1);
  EXPECT_EQ(w.parameter_count(), rows * 16 + bottom + top);
  EXPECT_EQ(w.parameter_count(), 540'677'217);
  EXPECT_EQ(w.name, "dlrm");
  EXPECT_EQ(w.sample_unit, "samples");
}

TEST(Dlrm, DotInteractionByHand) {
  const Workload w = dlrm(dlrm_criteo_kaggle_config());
  // T stacks the bottom MLP's output and the 26 embeddings: 27 vectors of 16.
  EXPECT_EQ(find(w, "interact.cat").input_elements, 27 * 16);
  EXPECT_EQ(find(w, "interact.cat").output_elements, 27 * 16);
  // Z = bmm(T, T^T): one 27 x 16 by 16 x 27 product per sample, 27 * 27 * 16 MACs.
  const Layer& bmm = find(w, "interact.bmm");
  EXPECT_EQ(bmm.kind, LayerKind::matmul);
  EXPECT_DOUBLE_EQ(bmm.forward_flops, 2.0 * 27 * 27 * 16);
  EXPECT_DOUBLE_EQ(bmm.forward_flops, 23'328.0);
  EXPECT_DOUBLE_EQ(bmm.backward_flops, 2 * bmm.forward_flops); // the gradients of both operands
  EXPECT_EQ(bmm.parameters, 0);
  EXPECT_EQ(bmm.gemm.m, 27);
  EXPECT_EQ(bmm.gemm.n, 27);
  EXPECT_EQ(bmm.gemm.k, 16);
  EXPECT_DOUBLE_EQ(bmm.gemm.flops(), bmm.forward_flops);
  EXPECT_EQ(bmm.output_elements, 27 * 27);
  // Each pair once, no self-interaction: 27 * 26 / 2 = 351; then the dense vector in front: 367 into the top MLP.
  EXPECT_EQ(find(w, "interact.tril").output_elements, 351);
  EXPECT_EQ(find(w, "interact.cat_dense").output_elements, 16 + 351);
  EXPECT_EQ(find(w, "top_l.0").input_elements, 367);
  EXPECT_EQ(find(w, "top_l.0").parameters, 367 * 512 + 512);
}

TEST(Dlrm, MlpsAndGemmMacsByHand) {
  const Workload w = dlrm(dlrm_criteo_kaggle_config());
  double macs = 0;
  for (const auto& l : w.layers)
    if (is_gemm_like(l.kind)) macs += l.forward_flops / 2;
  const double bottom = 13 * 512 + 512 * 256 + 256 * 64 + 64 * 16;
  const double top = 367 * 512 + 512 * 256 + 256 * 1;
  EXPECT_DOUBLE_EQ(macs, bottom + 27 * 27 * 16 + top);
  EXPECT_EQ(find(w, "bot_l.7").kind, LayerKind::elementwise); // ReLU after the last bottom layer too
  EXPECT_EQ(w.layers.back().name, "top_l.5");                 // the Sigmoid
  EXPECT_EQ(w.layers.back().output_elements, 1);
}

TEST(Dlrm, MultiHotLookupsReadEveryRowAndSumThem) {
  DlrmConfig c;
  c.dense_features = 4;
  c.table_rows = {100, 200};
  c.embedding_dim = 8;
  c.bottom_mlp = {8};
  c.top_mlp = {1};
  c.lookups_per_table = 3;
  const Workload w = dlrm(c, "tiny");
  const Layer& t = find(w, "emb_l.1");
  EXPECT_EQ(t.parameters, 200 * 8);
  EXPECT_EQ(t.input_elements, 3 * 8);         // three rows read
  EXPECT_EQ(t.output_elements, 8);            // pooled into one
  EXPECT_DOUBLE_EQ(t.forward_flops, 2.0 * 8); // two additions of 8
  EXPECT_DOUBLE_EQ(find(w, "interact.bmm").forward_flops, 2.0 * 3 * 3 * 8);
  EXPECT_EQ(find(w, "interact.tril").output_elements, 3); // 3 vectors: 3 pairs
  EXPECT_EQ(find(w, "top_l.0").input_elements, 8 + 3);
}

TEST(Dlrm, RejectsInconsistentConfigurations) {
  DlrmConfig c = dlrm_criteo_kaggle_config();
  c.bottom_mlp.back() = 32; // must end at the embedding dim
  EXPECT_THROW(dlrm(c), std::invalid_argument);
  c = dlrm_criteo_kaggle_config();
  c.table_rows.clear();
  EXPECT_THROW(dlrm(c), std::invalid_argument);
  c = dlrm_criteo_kaggle_config();
  c.table_rows[3] = 0;
  EXPECT_THROW(dlrm(c), std::invalid_argument);
}

TEST(MatrixFactorization, MovieLens25MTablesByHand) {
  const Workload w = mf_movielens25m();
  EXPECT_EQ(w.name, "mf-movielens25m");
  EXPECT_EQ(w.sample_unit, "samples"); // one rating
  const Layer& users = find(w, "user_embedding");
  const Layer& items = find(w, "item_embedding");
  EXPECT_EQ(users.parameters, 162'541 * 64);
  EXPECT_EQ(items.parameters, 59'047 * 64);
  EXPECT_EQ(w.parameter_count(), (162'541 + 59'047) * 64);
  EXPECT_EQ(w.parameter_count(), 14'181'632);
  for (const Layer* t : {&users, &items}) {
    EXPECT_EQ(t->kind, LayerKind::embedding);
    EXPECT_TRUE(t->sparse_gradient);
    EXPECT_EQ(t->input_elements, 64); // one row per rating
    EXPECT_EQ(t->output_elements, 64);
  }
}

TEST(MatrixFactorization, DotProductIsDimMultipliesAndAdds) {
  const Workload w = matrix_factorization(1000, 500, 32, "mf-test");
  EXPECT_EQ(w.parameter_count(), (1000 + 500) * 32);
  EXPECT_EQ(find(w, "mul").input_elements, 2 * 32);
  EXPECT_EQ(find(w, "sum").output_elements, 1); // the predicted rating
  EXPECT_DOUBLE_EQ(w.forward_flops_per_sample(), 2.0 * 32);
  EXPECT_EQ(std::count_if(w.layers.begin(), w.layers.end(), [](const Layer& l) { return is_gemm_like(l.kind); }), 0);
  EXPECT_THROW(matrix_factorization(0, 500, 32), std::invalid_argument);
}

TEST(RecommendationPresets, AreListedAndBuild) {
  const auto names = preset_names();
  for (const char* name : {"dlrm", "mf-movielens25m"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    const auto w = build_preset(name);
    ASSERT_TRUE(w.has_value()) << name;
    EXPECT_EQ(w->name, name);
    EXPECT_EQ(w->sample_unit, "samples");
  }
  EXPECT_EQ(build_preset("dlrm")->parameter_count(), 540'677'217);
}

} // namespace
} // namespace dtsim::models
