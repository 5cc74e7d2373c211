// `dtsim search` as a user runs it: the rankings and the counts on a model small enough to count by hand, the same
// bytes every time, CSV, several node counts, and the errors of bad input or of a space where nothing can run.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

// Eight matmuls of 300M weights (P = 2.4e9 in all; no transformer blocks, heads or experts, so every candidate is
// data parallel) on one node of 4 V100 16GB (16e9 bytes) at $36 per hour, 2 samples per GPU: a global batch of 8.
// Candidates, by hand: micro-batch 1 (2 accumulation steps) or 2 x ZeRO 0, 1, 3 x recompute none, selective, full =
// 18. The 6 with full recomputation are invalid (no transformer blocks to recompute). fp32 with momentum keeps
// 4 + 4 + 4 B per parameter; over 4 ranks:
//   ZeRO 0: 16P (with DDP's gradient buckets) = 38.4e9 B, ZeRO 1: 9P + 2 x 25 MiB = 21.65e9 B: 8 do not fit;
//   ZeRO 3: 3P + the full gradients and weights of the two largest layers (2 x 2 x 1.2e9 B) = 12e9 B, plus 40960 B of
//   activations per sample: 11.18 GiB. 4 are simulated.
std::string scenario_text() {
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    layers.push_back({{"name", "fc" + std::to_string(i)},
                      {"kind", "matmul"},
                      {"forward_flops", 1e6},
                      {"parameters", 300'000'000},
                      {"input_elements", 1024},
                      {"output_elements", 1024}});
  const nlohmann::json document = {{"version", 1},
                                   {"name", "search-cli"},
                                   {"model", {{"layers", layers}, {"batch_per_gpu", 2}}},
                                   {"cluster",
                                    {{"nodes", 1},
                                     {"gpus_per_node", 4},
                                     {"gpu", "v100"},
                                     {"nic", {{"bandwidth", "10Gbps"}, {"latency", "5us"}}},
                                     {"price_per_hour", 36}}},
                                   {"training", {{"optimizer", "momentum"}}}};
  return document.dump(2);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line, char separator = ' ') {
  std::vector<std::string> out;
  std::istringstream in(line);
  if (separator == ' ') {
    for (std::string word; in >> word;)
      out.push_back(word);
  } else {
    for (std::string field; std::getline(in, field, separator);)
      out.push_back(field);
    if (!line.empty() && line.back() == separator) out.emplace_back(); // an empty last field
  }
  return out;
}

// The table rows under the line `title` (after its two header lines), up to the next blank line.
std::vector<std::vector<std::string>> rows_under(const std::string& text, const std::string& title) {
  const auto all = lines(text);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] != title && all[i] != title + " and by cost") continue; // the two rankings as one table when alike
    for (std::size_t j = i + 3; j < all.size() && !all[j].empty(); ++j)
      rows.push_back(words(all[j]));
  }
  return rows;
}

std::string quoted(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

// Columns of a ranking: tp pp dp ep micro-batch micro-batches schedule zero recompute sp estimate iteration
// throughput memory cost.
enum Column {
  tp,
  pp,
  dp,
  ep,
  batch,
  micro_batches,
  schedule,
  zero,
  recompute,
  sp,
  estimate,
  iteration,
  throughput,
  mfu,
  memory,
  cost
};

TEST(SearchCommand, RanksTheCandidatesThatFitWithFiguresFromTheirUnits) {
  TempDir dir;
  const auto scenario = dir.write("s.json", scenario_text());
  const auto inv = run_dtsim("search " + quoted(scenario) + " --top 3 --jobs 2", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  EXPECT_NE(inv.out.find("global batch 8 samples per iteration"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("Candidates: 18 enumerated, 6 invalid, 8 do not fit in GPU memory, 4 estimated, 4 simulated, "
                         "0 failed"),
            std::string::npos)
      << inv.out;
  EXPECT_NE(inv.out.find("invalid (6 candidates): /training/recompute"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("needs 20.17 GiB per GPU of 14.90 GiB"), std::string::npos) << inv.out; // ZeRO 1, 21.65e9 B
  for (const auto* unit : {"(samples)", "(s)", "(samples/s)", "(GiB/GPU)", "(USD/1M samples)"})
    EXPECT_NE(inv.out.find(unit), std::string::npos) << unit << "\n" << inv.out;

  const auto best = rows_under(inv.out, "Best 3 by throughput and by cost");
  ASSERT_EQ(best.size(), 3u) << inv.out;
  double previous = INFINITY;
  for (const auto& row : best) {
    ASSERT_EQ(row.size(), 16u) << inv.out;
    EXPECT_EQ(row[tp] + row[pp] + row[dp] + row[ep], "1141");
    EXPECT_EQ(row[schedule], "-"); // no pipeline
    EXPECT_EQ(row[zero], "3");     // the only stage that fits
    EXPECT_EQ(std::stoi(row[batch]) * std::stoi(row[micro_batches]), 2) << "8 samples over 4 replicas";
    EXPECT_EQ(row[memory], "11.18"); // 12e9 B + 40960 B per sample = 11.176 GiB
    const double seconds = std::stod(row[iteration]), rate = std::stod(row[throughput]);
    // 8 samples per iteration; $36 per hour is $0.01 per second, so 0.01 / rate x 1e6 USD per million samples.
    EXPECT_NEAR(rate * seconds, 8.0, 8.0 * 1e-3) << inv.out;
    EXPECT_NEAR(std::stod(row[cost]), 1e4 / rate, 1e4 / rate * 1e-3) << inv.out;
    EXPECT_LE(rate, previous);
    previous = rate;
  }
  // Without attention, selective recomputation changes nothing: the tie goes to the candidate listed first.
  EXPECT_EQ(best[0][throughput], best[1][throughput]);
  EXPECT_EQ(best[0][recompute], "none");
  EXPECT_EQ(best[1][recompute], "selective");
  // One cluster, one price: the cheapest per sample are the fastest, so one table says both.
  EXPECT_EQ(inv.out.find("Best 3 by cost\n"), std::string::npos) << inv.out;

  // The same input, the same bytes.
  const auto again = run_dtsim("search " + quoted(scenario) + " --top 3 --jobs 1", dir);
  EXPECT_EQ(again.out, inv.out);
}

// CSV: every simulated candidate by throughput, in base units; with two node counts each is a cluster of its own.
// 2 nodes (8 GPUs, global batch still 8): micro-batch 1 only x 3 stages x 3 recomputations = 9, 3 invalid; over 8
// ranks ZeRO 0 (16P) and ZeRO 1 (8P + P/2 + 50 MiB = 20.45e9 B) do not fit, ZeRO 3 (1.5P + 4.8e9 = 8.4e9 B) does:
// 2 more simulated. In all 27 enumerated, 9 invalid, 12 do not fit, 6 simulated.
TEST(SearchCommand, CsvListsEverySimulatedCandidate) {
  TempDir dir;
  const auto scenario = dir.write("s.json", scenario_text());
  const auto inv = run_dtsim("search " + quoted(scenario) + " --csv --nodes 1,2 --jobs 2", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  EXPECT_NE(inv.err.find("Candidates: 27 enumerated, 9 invalid, 12 do not fit in GPU memory, 6 estimated, 6 simulated, "
                         "0 failed"),
            std::string::npos)
      << inv.err;
  const auto rows = lines(inv.out);
  ASSERT_EQ(rows.size(), 7u) << inv.out;
  const auto header = words(rows[0], ',');
  ASSERT_EQ(header.size(), 23u);
  EXPECT_EQ(header[12], "sequence_parallel");
  EXPECT_EQ(header[13], "estimate_rank");
  EXPECT_EQ(header[14], "estimate_seconds");
  EXPECT_EQ(header[16], "throughput_samples_per_second");
  EXPECT_EQ(header[17], "samples_per_second");
  EXPECT_EQ(header[18], "mfu");
  EXPECT_EQ(header[19], "memory_bytes_per_gpu");
  EXPECT_EQ(header[21], "cost_usd_per_million_samples");
  int two_nodes = 0;
  double previous = INFINITY;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto f = words(rows[i], ',');
    ASSERT_EQ(f.size(), 23u) << rows[i];
    const int nodes = std::stoi(f[0]);
    two_nodes += nodes == 2;
    EXPECT_EQ(f[1], std::to_string(4 * nodes));
    EXPECT_EQ(f[10], "3");
    const double seconds = std::stod(f[15]), rate = std::stod(f[16]), memory = std::stod(f[19]);
    EXPECT_GT(std::stod(f[14]), 0); // every one of these has an estimate
    EXPECT_NEAR(rate * seconds, 8.0, 1e-6);
    EXPECT_NEAR(memory, nodes == 1 ? 12e9 + 40960.0 * std::stoi(f[6]) : 8.4e9 + 40960.0, 1e-6 * memory);
    EXPECT_EQ(std::stod(f[17]), rate); // samples are the unit
    // Megatron-LM's model FLOPs: each GEMM 3 times per sample, 3 x 8 layers x 1e6 x 8 samples per iteration, over
    // the GPUs' fp32 peak (V100: 15.7 TFLOP/s) for the iteration.
    EXPECT_NEAR(std::stod(f[18]), 3 * 8 * 1e6 * 8 / (seconds * 4 * nodes * 15.7e12), 1e-6 * std::stod(f[18]));
    EXPECT_EQ(std::stod(f[20]), 36.0 * nodes); // the cluster's USD per hour
    EXPECT_NEAR(std::stod(f[21]), 36.0 * nodes / 3600 / rate * 1e6, 1e-6 * std::stod(f[21]));
    EXPECT_TRUE(f[22].empty());
    EXPECT_LE(rate, previous);
    previous = rate;
  }
  EXPECT_EQ(two_nodes, 2);
}

// GPT-3 125M (12 blocks, 12 heads, 2048 tokens) on one node of 4 A100 80GB, 2 sequences per GPU: a global batch of 8
// sequences, 16384 tokens. By hand (tests/sim/search_test.cpp spells the count out): 282 candidates over
// (tp, pp) = (1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1). What fits and what the planner runs is the memory
// model's and the planner's business; every candidate is accounted for once, and each row trains 16384 tokens per
// iteration on tp x pp x dp = 4 GPUs.
TEST(SearchCommand, TransformerThroughputIsInTokens) {
  TempDir dir;
  const nlohmann::json document = {{"version", 1},
                                   {"name", "search-gpt"},
                                   {"model", {{"preset", "gpt3-125m"}, {"batch_per_gpu", 2}, {"precision", "bf16"}}},
                                   {"cluster",
                                    {{"nodes", 1},
                                     {"gpus_per_node", 4},
                                     {"gpu", "a100-80gb"},
                                     {"nic", {{"bandwidth", "100Gbps"}}},
                                     {"price_per_hour", 36}}}};
  const auto scenario = dir.write("gpt.json", document.dump());
  const auto inv = run_dtsim("search " + quoted(scenario) + " --top 5 --jobs 2", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  EXPECT_NE(inv.out.find("global batch 8 sequences of 2048 tokens per iteration"), std::string::npos) << inv.out;
  for (const auto* unit : {"(sequences)", "(tokens/s)", "(USD/1M tokens)"})
    EXPECT_NE(inv.out.find(unit), std::string::npos) << unit << "\n" << inv.out;
  int enumerated = -1, invalid = -1, too_big = -1, estimated = -1, simulated = -1;
  const auto at = inv.out.find("Candidates: ");
  ASSERT_NE(at, std::string::npos) << inv.out;
  ASSERT_EQ(std::sscanf(inv.out.c_str() + at,
                        "Candidates: %d enumerated, %d invalid, %d do not fit in GPU memory, %d estimated", &enumerated,
                        &invalid, &too_big, &estimated),
            4)
      << inv.out;
  // The closed form's screen (every layout with tensor or pipeline parallelism) passes its best 64 on to be built,
  // with the data-parallel ones it does not price.
  int closed_form = -1, built = -1;
  ASSERT_EQ(std::sscanf(inv.out.c_str() + inv.out.find(" (", at),
                        " (%d in closed form alone, not built; %d from their plans), %d simulated", &closed_form,
                        &built, &simulated),
            3)
      << inv.out;
  EXPECT_EQ(closed_form + built, estimated);
  EXPECT_GE(built, 64);
  EXPECT_EQ(enumerated, 282);
  EXPECT_EQ(invalid + too_big + estimated, 282); // every one that fits has an estimate
  EXPECT_EQ(simulated, std::min(estimated, 20)); // the best 20 by it are simulated
  EXPECT_NE(inv.out.find("(the best by the estimate), 0 failed"), std::string::npos) << inv.out;
  const auto best = rows_under(inv.out, "Best 5 by throughput");
  ASSERT_EQ(best.size(), 5u) << inv.out;
  for (const auto& row : best) {
    ASSERT_EQ(row.size(), 16u) << inv.out;
    EXPECT_EQ(std::stoi(row[tp]) * std::stoi(row[pp]) * std::stoi(row[dp]), 4);
    EXPECT_EQ(std::stoi(row[batch]) * std::stoi(row[dp]) * std::stoi(row[micro_batches]), 8);
    const double seconds = std::stod(row[iteration]), rate = std::stod(row[throughput]);
    EXPECT_NEAR(rate * seconds, 16384.0, 16384.0 * 1e-3) << inv.out;             // 8 sequences x 2048 tokens
    EXPECT_NEAR(std::stod(row[cost]), 1e4 / rate, 1e4 / rate * 1e-3) << inv.out; // $0.01 per second
  }

  // MFU, every simulated candidate: Megatron-LM's model FLOPs count each GEMM 3 times per sequence, whatever the
  // layout or the recomputation. Per sequence forward: 12 blocks of 24 s h^2 (QKV, out, 4h FFN) + 4 s^2 h (Q K^T, P V),
  // and the LM head 2 s h V, with s 2048, h 768, V 50257: 6.606e11 FLOPs. An iteration of 8 sequences is 3 x 8 x that;
  // over 4 GPUs at A100's 312 TFLOP/s bf16 peak, MFU x iteration time = 0.0127040 s.
  const auto csv = run_dtsim("search " + quoted(scenario) + " --csv --jobs 2", dir);
  ASSERT_EQ(csv.status, 0) << csv.err;
  const double s = 2048, h = 768, v = 50257;
  const double forward = 12 * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * v;
  const double expected = 3 * 8 * forward / (4 * 312e12);
  const auto rows = lines(csv.out);
  ASSERT_EQ(static_cast<int>(rows.size()), estimated + 1) << csv.out; // the simulated, then the others
  int rows_simulated = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].back() != ',') continue; // not simulated, or failed: why is the last field
    ++rows_simulated;
    const auto f = words(rows[i], ',');
    ASSERT_EQ(f.size(), 23u) << rows[i];
    EXPECT_NEAR(std::stod(f[18]) * std::stod(f[15]), expected, expected * 1e-6) << rows[i];
    EXPECT_NEAR(std::stod(f[16]), 2048 * std::stod(f[17]), 1e-6 * std::stod(f[16])) << rows[i]; // tokens, sequences
  }
  EXPECT_EQ(rows_simulated, simulated);
}

TEST(SearchCommand, NothingThatCanRunIsAnErrorThatSaysWhy) {
  TempDir dir;
  const auto scenario = dir.write("s.json", scenario_text());
  // One GPU: nothing to shard over, 12P + 40960 b B = 28.8e9 B (26.82 GiB) per GPU on every candidate.
  const auto alone = run_dtsim("search " + quoted(scenario) + " --set cluster.gpus_per_node=1", dir);
  EXPECT_EQ(alone.status, 1) << alone.out << alone.err;
  EXPECT_TRUE(alone.out.empty()) << alone.out;
  EXPECT_NE(alone.err.find("no candidate layout ran"), std::string::npos) << alone.err;
  EXPECT_NE(alone.err.find("18 enumerated, 6 invalid, 12 do not fit in GPU memory, 0 estimated, 0 simulated"),
            std::string::npos)
      << alone.err;
  EXPECT_NE(alone.err.find("needs 26.82 GiB per GPU of 14.90 GiB"), std::string::npos) << alone.err;

  // 3 nodes: 12 replicas never divide a global batch of 8.
  const auto three = run_dtsim("search " + quoted(scenario) + " --nodes 3", dir);
  EXPECT_EQ(three.status, 1) << three.out << three.err;
  EXPECT_NE(three.err.find("no layout divides the global batch of 8 samples"), std::string::npos) << three.err;
}

TEST(SearchCommand, BadInputIsRefusedBeforeAnythingRuns) {
  TempDir dir;
  const auto scenario = dir.write("s.json", scenario_text());
  const auto nodes = run_dtsim("search " + quoted(scenario) + " --nodes 0,x", dir);
  EXPECT_EQ(nodes.status, 2);
  EXPECT_NE(nodes.err.find("bad node list"), std::string::npos) << nodes.err;
  const auto fidelity = run_dtsim("search " + quoted(scenario) + " --fidelity fast", dir);
  EXPECT_EQ(fidelity.status, 2);
  EXPECT_NE(fidelity.err.find("fidelity"), std::string::npos) << fidelity.err;
  EXPECT_EQ(run_dtsim("search " + quoted(scenario) + " --top 0", dir).status, 2);
  for (const char* simulate : {"0", "-3", "some", "5x"}) {
    const auto bad = run_dtsim("search " + quoted(scenario) + " --simulate " + simulate, dir);
    EXPECT_EQ(bad.status, 2) << simulate;
    EXPECT_NE(bad.err.find("--simulate"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("expected a count >= 1 or \"all\""), std::string::npos) << bad.err;
  }
  const auto set = run_dtsim("search " + quoted(scenario) + " --set model.batch_per_gpu=0", dir);
  EXPECT_EQ(set.status, 2);
  EXPECT_NE(set.err.find("batch_per_gpu"), std::string::npos) << set.err;
}

} // namespace
} // namespace dtsim::testing
