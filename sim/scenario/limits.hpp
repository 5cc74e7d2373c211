#pragma once
// The largest values the scenario format accepts, one place for all. Each is far beyond any published training job
// (the reason is given), and small enough that every count, size and product dtsim forms from them fits a 64-bit
// integer, or a double exactly: a value past one is refused at its JSON pointer rather than overflowing later. What
// the format accepts still has to fit the machine: the resource estimate (sim/plan/footprint.hpp) refuses a
// simulation too large to run, before it runs.
#include <cstdint>

namespace dtsim::scenario::limits {

// Cluster. 2^20 nodes of up to 1,024 GPUs: El Capitan and Frontier have about 10,000 nodes.
inline constexpr std::int64_t kNodes = std::int64_t{1} << 20;
inline constexpr std::int64_t kGpusPerNode = 1024;
// Every GPU of the cluster is a rank and a SimGrid host: 2^24 (16.8 million) is 150 times the largest published
// training cluster (Meta's 100,000-GPU clusters) and keeps rank counts and their products in an int.
inline constexpr std::int64_t kGpus = std::int64_t{1} << 24;

// Model. The largest published dense transformers have 96 to 128 blocks (GPT-3, Megatron-Turing 530B), widths of
// 12,288 to 25,600, vocabularies up to 256,000 (Gemma) and contexts of 10 million tokens (Gemini 1.5).
inline constexpr std::int64_t kLayers = 4096;
inline constexpr std::int64_t kWidth = std::int64_t{1} << 20;      // hidden, head_dim
inline constexpr std::int64_t kFfnWidth = std::int64_t{1} << 22;   // ffn_hidden (dense or per expert)
inline constexpr std::int64_t kHeads = std::int64_t{1} << 16;      // query and key/value heads
inline constexpr std::int64_t kSequence = std::int64_t{1} << 24;   // tokens, positions
inline constexpr std::int64_t kVocabulary = std::int64_t{1} << 24; // 16.8 million tokens
inline constexpr std::int64_t kExperts = std::int64_t{1} << 16;    // Mixture-of-Experts experts per layer
inline constexpr std::int64_t kSmallCount = std::int64_t{1} << 16; // buckets, token types, adaptive factors
// A layer table's element and parameter counts: 2^50 (a quadrillion) elements is 2 PB in bf16.
inline constexpr std::int64_t kElements = std::int64_t{1} << 50;
inline constexpr double kLayerFlops = 1e24; // per sample: a million times GPT-3's 3.5e11 per token

// Batches: 2^20 samples per GPU, 2^40 per iteration (global_batch), 2^20 micro-batches per pipeline.
inline constexpr std::int64_t kBatchPerGpu = std::int64_t{1} << 20;
inline constexpr std::int64_t kGlobalBatch = std::int64_t{1} << 40;
inline constexpr std::int64_t kMicroBatches = std::int64_t{1} << 20;

// Runs: a million simulated iterations (each one's timeline is kept; the estimate bounds what fits).
inline constexpr std::int64_t kIterations = 1'000'000;

// Steps of a whole run (dtsim train): 10^12, ten million times GPT-3's 300 billion tokens in 3.2-million-token batches.
inline constexpr std::int64_t kSteps = 1'000'000'000'000;

// Prices in USD per node-hour: the costliest cloud instance lists about $100 an hour.
inline constexpr double kPricePerHour = 1e6;

// Quantities, in base units. Below 1 kB/s a link is no cluster network, and SimGrid's solver aborts on rates near
// zero; 1 PB/s is 500 times an NVLink 5 GPU's 1.8 TB/s. A latency of a second is a million times a switch hop.
inline constexpr double kMinBandwidth = 1e3;
inline constexpr double kMaxBandwidth = 1e15;
inline constexpr double kMaxLatency = 1;
inline constexpr double kMaxBytes = static_cast<double>(std::int64_t{1} << 50); // 1 PiB
inline constexpr double kMaxFlopRate = 1e21;
// Durations of a whole run (checkpoint intervals, restarts, a unit's mean time between failures): 10,000 years.
// Per-unit MTBFs run long: a node's NIC in Meta's Llama 3 study (7 interruptions over 2,048 nodes in 54 days) is 43
// years.
inline constexpr double kMaxDuration = 1e4 * 365 * 86400.0;

// Energy. One node's draw besides its GPUs: 1 MW, a hundred times an 8-GPU H100 node's whole measured peak (8.4 kW,
// Latif et al. 2025). A grid's carbon intensity: 5 kg CO2 per kWh, five times the dirtiest published grids (lignite,
// about 1.1 kg/kWh). A data centre's PUE: 10 (published fleets report 1.1 to 1.6).
inline constexpr double kMaxPower = 1e6;
inline constexpr double kMaxCarbonIntensity = 5000;
inline constexpr double kMaxPue = 10;

} // namespace dtsim::scenario::limits
