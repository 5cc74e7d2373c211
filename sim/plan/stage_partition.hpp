#pragma once
// Cutting a model into pipeline stages. A unit is a transformer block with its ops; the ops before the first block
// join the first unit and those after the last block the last (Megatron-LM puts the embedding on the first stage and
// the LM head and loss on the last); a model without blocks has one unit per layer.
#include "calibration/framework.hpp"
#include "models/layer.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstddef>
#include <vector>

namespace dtsim::plan {

// Per unit, the indices of its layers, in order.
std::vector<std::vector<std::size_t>> pipeline_units(const models::Workload& workload);

// Units per chunk as a framework that cuts uniformly does (calibration::PipelineSplit::uniform: Megatron-LM's
// get_num_layers_to_build gives every chunk num_layers / (pipeline x virtual stages) blocks); empty where the framework
// balances by time or the units do not divide, so the caller balances.
std::vector<int> uniform_split(calibration::PipelineSplit split, std::size_t units, int chunks);
// The scenario's framework's split where it applies: empty (the caller balances by time) where the scenario asks for
// "stages": "balanced", or mixes GPUs (each stage sized by its GPU's speed, as HetPipe does), or the framework
// balances.
std::vector<int> framework_split(const scenario::Scenario& s, std::size_t units, int chunks);
// Units per chunk: the contiguous split of `seconds` (each unit's time) into `chunks` non-empty parts whose largest
// part is smallest (dynamic programming over the prefix sums; among equal splits, the one whose earlier parts are
// largest, so ties go the same way every run).
std::vector<int> balanced_split(const std::vector<double>& seconds, int chunks);
// The same where each chunk runs on a GPU of its own (a cluster of mixed GPUs, HetPipe's stages): seconds[c][u] is
// unit u's time on chunk c's GPU; the split minimizes the largest chunk's time on its own GPU.
std::vector<int> balanced_split_by_chunk(const std::vector<std::vector<double>>& seconds);

} // namespace dtsim::plan
