#pragma once
// The input pipeline as a stage of the iteration: each node's data loaders (PyTorch DataLoader workers) decode and
// augment samples on its CPU cores, reading them from storage, and share that rate among the node's GPUs. As
// prefetching loaders do, the next batch is prepared while the GPU trains on this one, so an iteration lasts as long
// as the slower of the two: the GPU's work or the loader's.
#include "sim/graph/execution_graph.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim::plan {

struct InputRates {
  double cpu_samples_per_second = 0;     // cores x samples per core per second
  double storage_samples_per_second = 0; // storage bandwidth / sample bytes; 0 = no storage bound
  double samples_per_second = 0;         // the node's rate: the smaller of the two
  double seconds_per_iteration = 0;      // a GPU's batch at its share of the node's rate
  bool storage_bound() const {
    return storage_samples_per_second > 0 && storage_samples_per_second < cpu_samples_per_second;
  }
};

// The node's rates and each GPU's loader time per iteration: batch_per_gpu x gpus_per_node / node rate.
// All zero without an "input" section.
InputRates input_rates(const scenario::Scenario& scenario);

// Adds the loader's "load batch" op to a program, on the input stream with no dependencies: it runs beside the
// GPU's work, and the rank's next iteration waits for it. Does nothing when `seconds` is 0.
void add_input_stage(graph::Program& program, double seconds);

} // namespace dtsim::plan
